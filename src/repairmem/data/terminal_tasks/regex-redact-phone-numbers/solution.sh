sed -E -i 's/(\([0-9]{3}\) |[0-9]{3}-)[0-9]{3}-[0-9]{4}/[REDACTED]/g' notes.txt
