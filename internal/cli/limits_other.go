//go:build !linux

package cli

// physicalMemory is the machine's memory in bytes, 0 when unknown.
func physicalMemory() int64 { return 0 }
