#!/bin/bash
# usage: start_alarm.sh N  — starts alarm N, appends logs to alarmN.log, pid to alarmN.pid
cd /tmp/alarmtrial/trial
echo "{\"trial_marker\":\"start alarm$1\",\"t\":\"$(date -u +%FT%T.%3NZ)\"}" >> alarm$1.log
nohup /tmp/alarmtrial/binlake alarm -config alarm$1.yaml -policies policies.yaml >> alarm$1.log 2>&1 &
echo $! > alarm$1.pid
