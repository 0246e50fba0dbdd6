#!/bin/bash
mkdir -p /logs/verifier
one=0; two=0
[ "$(cat /app/one.txt 2>/dev/null)" = "hello" ] && one=1
[ "$(cat /app/two.txt 2>/dev/null)" = "104743" ] && two=1
python3 -c "import json; print(json.dumps({'reward': ($one + $two) / 2, 'part_one': $one, 'part_two': $two}))" > /logs/verifier/reward.json
