#!/bin/bash
mkdir -p /logs/verifier
reward=1
[ "$(cat /app/report.txt 2>/dev/null)" = "9" ] || { echo "/app/report.txt is not 9"; reward=0; }
[ "$(python3 /app/wc.py /tests/sample.txt 2>&1)" = "$EXPECTED_SAMPLE_WORDS" ] || { echo "wc.py miscounts /tests/sample.txt"; reward=0; }
echo $reward > /logs/verifier/reward.txt
