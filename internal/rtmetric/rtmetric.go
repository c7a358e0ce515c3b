// Package rtmetric reads one of the Go runtime's uint64 metrics
// (runtime/metrics) by name, for code that polls one figure of the
// collector. It keeps no state and starts nothing.
package rtmetric

import "runtime/metrics"

// Uint64 returns the runtime metric name, or 0 if this runtime does not
// have it as a uint64.
func Uint64(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
