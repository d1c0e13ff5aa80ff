printf 'APP_NAME=shop\nLOG_LEVEL=verbose\nWORKERS=4\n' > .env
