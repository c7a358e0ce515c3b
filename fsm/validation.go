package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	fsmv1 "github.com/ledgerd/ledgerd/gen/ledgerd/fsm/v1"
)

// Limits on client-supplied strings, checked deterministically in Apply.
const (
	maxIDLen         = 128
	maxOwnerLen      = 256
	maxUnitLen       = 64
	maxLabels        = 64
	maxLabelKeyLen   = 128
	maxLabelValueLen = 1024
	maxParts         = 64
	// AutoIDPrefix starts every ID the state machine assigns; client IDs
	// must not start with it.
	AutoIDPrefix = "r-"
)

func validID(id string) string {
	switch {
	case id == "":
		return "must not be empty"
	case len(id) > maxIDLen:
		return fmt.Sprintf("longer than %d bytes", maxIDLen)
	case strings.HasPrefix(id, AutoIDPrefix):
		return fmt.Sprintf("must not start with the reserved prefix %q", AutoIDPrefix)
	}
	for _, c := range id {
		if !idChar(c) {
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : -)", c)
		}
	}
	return ""
}

// idChar reports whether c may appear in a reservation ID; resource names
// allow '/' as well.
func idChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-'
}

func validResourceName(n string) string {
	switch {
	case n == "":
		return "must not be empty"
	case len(n) > maxIDLen:
		return fmt.Sprintf("longer than %d bytes", maxIDLen)
	}
	for _, c := range n {
		if !idChar(c) && c != '/' {
			return fmt.Sprintf("character %q not allowed (use A-Z a-z 0-9 . _ : / -)", c)
		}
	}
	return ""
}

// checkLabels validates labels in key order, so the first problem reported
// is the same on every replica.
func checkLabels(field string, labels map[string]string) *fsmv1.Result {
	if len(labels) > maxLabels {
		return invalid(field, fmt.Sprintf("more than %d labels", maxLabels))
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case k == "":
			return invalid(field, "empty key")
		case len(k) > maxLabelKeyLen:
			return invalid(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("key longer than %d bytes", maxLabelKeyLen))
		case len(labels[k]) > maxLabelValueLen:
			return invalid(fmt.Sprintf("%s[%q]", field, k), fmt.Sprintf("value longer than %d bytes", maxLabelValueLen))
		}
	}
	return nil
}

// checkTTL resolves a requested TTL (0 = default).
func (s *state) checkTTL(field string, ttl int64) (int64, *fsmv1.Result) {
	switch {
	case ttl == 0:
		return s.cfg.DefaultHoldTTL, nil
	case ttl < 0:
		return 0, invalid(field, "must be >= 0")
	case ttl > s.cfg.MaxHoldTTL:
		return 0, invalid(field, fmt.Sprintf("must be <= %d", s.cfg.MaxHoldTTL))
	}
	return ttl, nil
}

func checkParts(field string, parts []*fsmv1.Part) *fsmv1.Result {
	if len(parts) > maxParts {
		return invalid(field, fmt.Sprintf("more than %d parts", maxParts))
	}
	return nil
}

// owned looks up the reservation a command targets and checks the owner.
func (s *state) owned(cmd *fsmv1.Command, field, id string) (*fsmv1.Reservation, *fsmv1.Result) {
	if id == "" {
		return nil, invalid(field, "must not be empty")
	}
	r, found := s.resv.get(id)
	if !found {
		return nil, notFound(fmt.Sprintf("reservation %q not found", id))
	}
	if !cmd.GetPrivileged() && cmd.GetOwner() != r.GetOwner() {
		return nil, &fsmv1.Result{
			Status:  fsmv1.Result_STATUS_PERMISSION_DENIED,
			Message: fmt.Sprintf("reservation %q belongs to another owner", id),
		}
	}
	return r, nil
}
