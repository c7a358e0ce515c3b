// Package planner is the deterministic scheduling core of ledgerd: per
// resource timelines of free capacity kept as canonical lists of free blocks
// (Schneider & Linnert), earliest-fit admission inside a booking window,
// co-allocation over several resources at one common start, exact
// book/release/modify, capacity changes over a window, and availability
// reports. Complete ends a booking early and reports requested vs actual
// duration.
//
// On top of the Planner, a Scheduler (policy.go) implements the policies
// of the planning-based papers: variable jobs planned at their earliest
// slot and re-planned until they start, per-resource admission
// (REJECT, MOVE_VARIABLE with a bound on pushes, RELAXED admission by the
// estimated probability of no violation learned from recorded
// completions), violation detection when items are due, and relaxed
// co-reservation over several resources.
//
// UnitSchedule (units.go, UNITS.md) is the two-level schedule of a
// resource made of named units: a global timeline of summed capacity for
// admission plus one schedule per unit that maps every booking to
// concrete units, deterministically, with per-unit down windows and two
// policies for a request that fits in sum but on no set of units
// (refuse, or move bookings that are neither materialized nor running).
//
// What it must not do: read a clock, draw random numbers, start goroutines,
// do I/O, or depend on map iteration order. Time and capacity are int64;
// the caller passes "now". It imports no time, os, net, sync, raft or
// protobuf packages, and of this module only internal/rangesort and
// internal/idhash, which import nothing (deps_test.go enforces this), so
// that every replica of the ledger reaches the same decision from the
// same log.
//
// Caller's duties: serialise access (nothing here is safe for concurrent
// use) and call Advance with a non-decreasing now.
package planner
