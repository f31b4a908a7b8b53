package jsonenc

// SkipSpace returns the index of the first byte of b at or after i that is not JSON
// whitespace (space, tab, newline, carriage return), or len(b). The hand-written JSON
// readers (metric batches, placement requests, compaction) share it.
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}
