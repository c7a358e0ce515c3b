// Package threadcpu reads the CPU time of the calling OS thread, so that
// a goroutine locked to its thread (runtime.LockOSThread) can measure the
// CPU its own work took, without the time it spent waiting for a core.
// It does not lock or unlock threads itself; off Linux it reports that
// the clock is unavailable.
package threadcpu
