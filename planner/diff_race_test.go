//go:build race

package planner

// raceEnabled reports a -race build; the differential campaign is halved
// there to keep the default test run short.
const raceEnabled = true
