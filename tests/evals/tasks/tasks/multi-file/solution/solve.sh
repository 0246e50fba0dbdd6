#!/bin/bash
set -e
cp /solution/lib/$WC_MODULE.py /app/$WC_MODULE.py
cp /solution/wc.py /app/wc.py
python3 /app/wc.py /app/input.txt > /app/report.txt
