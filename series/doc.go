// Package series is ledgerd's standing reservations: an RFC 5545
// recurrence rule (RRULE) plus an IANA time zone, parsed and checked
// (Parse, with errors naming the field and the rule part), stored as a
// canonical, versioned Spec (Encode, Decode), and expanded into concrete
// start instants in Unix milliseconds (Series.Expand, Series.Occurrences).
// Series.Next and Accept give each occurrence of a series an identity
// (series ID + local wall-clock start, OccurrenceID) and book it exactly
// once however often leaders die between expansions.
//
// Where expansion happens: on the leader, before it proposes. The log
// holds the instants (and each series' watermark), never a rule to be
// expanded by each replica, so applying an entry needs no time-zone
// database and no clock. Expansion itself reads only the zone database
// embedded in this package (zoneinfo.zip, TZDataVersion), never the
// host's, so two leaders of one release expand a series identically.
//
// The calendar arithmetic is github.com/teambition/rrule-go's, run on
// "floating" wall-clock times (a time.Time in UTC that stands for the
// local wall clock). This package turns each wall-clock time into an
// instant itself, by RFC 5545's rule for times that do not exist or exist
// twice (see instant), and applies COUNT, UNTIL, NotBefore and End to the
// instants.
//
// What it must not do: read a clock (now is an argument), draw random
// numbers, load a zone with time.LoadLocation or use time.Local (a
// deps_test checks the sources), or be imported for expansion by the
// state machine's apply path: fsm may call Decode, CheckBatch and Accept,
// which need no zone data, but never Compile or Next.
//
// Caller's duties: the edge calls Parse and stores Spec.Encode(); the
// leader calls Compile on the stored spec and, on its tick, Next with the
// series' replicated watermark and its own clock, and proposes the batch;
// apply runs CheckBatch and Accept and admits the fresh occurrences as
// ordinary reservations with IDs from OccurrenceID.
package series
