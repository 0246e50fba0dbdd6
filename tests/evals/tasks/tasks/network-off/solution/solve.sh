#!/bin/bash
ls /sys/class/net | sort > /app/interfaces.txt
