chmod +x lint
