#!/bin/bash
# Deliberately half a solution: the task checks that a partial reward is reported as such.
echo hello > /app/one.txt
