// Package upgradetest checks rolling upgrades with real processes: a
// three-server cluster that mixes the previous release's ledgerd binary,
// built from git history, with this tree's, written to through every
// server with the ledgerd command line while old and new servers lead in
// turn (design invariant 12: the previous release and the new one run
// together in one cluster).
//
// It holds tests only: no package may import it, and it must not grow
// non-test code. The test needs git history and a Go toolchain; without
// them it skips with the reason, except under CI=true, where it fails.
// It is skipped with -short.
package upgradetest
