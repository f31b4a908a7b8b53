package kafka

import "time"

// warnEvery is how often one kind of kafka-go warning is logged while it repeats: during
// a broker outage kafka-go retries every few hundred milliseconds and says so in five
// lines a retry, which buried the lines that said what the process did about it.
const warnEvery = 30 * time.Second
