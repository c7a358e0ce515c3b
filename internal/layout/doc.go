// Package layout holds only a test: the package layout's "never" rules
// (which part of the tree may not import which), checked against the
// imports of every non-test package. It has no code of its own.
package layout
