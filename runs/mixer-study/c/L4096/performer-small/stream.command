build/grassflow bench generate --model performer-small --vocab 65 --set max_len=4096 --positions 4032 --tokens 64 --json
