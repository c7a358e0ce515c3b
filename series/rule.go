package series

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/teambition/rrule-go"
)

// maxRuleLen bounds the text of a rule; real rules are far shorter.
const maxRuleLen = 1024

// maxInterval bounds INTERVAL (every 10,000 years is already silly).
const maxInterval = 10000

// rule is a parsed RRULE: the rule parts this package accepts, each at most
// once. The calendar arithmetic is rrule-go's; this type only keeps what
// the text said, checks it, and prints it back in one canonical order.
type rule struct {
	freq     rrule.Frequency
	interval int // >= 1
	count    int // 0: none
	// until is the UNTIL text in canonical form ("" when absent): a UTC
	// date-time "YYYYMMDDTHHMMSSZ" or a date "YYYYMMDD" (this package's
	// extension: every occurrence on that local day or before).
	until      string
	untilUTC   time.Time // set for a UTC date-time
	untilDate  civil     // set for a date (time of day 00:00:00)
	bymonth    []int
	byweekno   []int
	byyearday  []int
	bymonthday []int
	byday      []rrule.Weekday
	byhour     []int
	byminute   []int
	bysetpos   []int
	wkst       rrule.Weekday
	wkstSet    bool
}

// partOrder is the canonical order of rule parts: Spec.Rule lists them so,
// and so parsing and printing a canonical rule gives it back byte for byte.
var partOrder = []string{"FREQ", "INTERVAL", "COUNT", "UNTIL", "BYMONTH", "BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY", "BYHOUR", "BYMINUTE", "BYSETPOS", "WKST"}

// refused names rule parts that RFC 5545 defines (or rrule-go adds) and
// this package does not accept, with the reason given to the caller.
var refused = map[string]string{
	"BYSECOND": "not supported: occurrences start on whole minutes (the seconds come from the series' start)",
	"BYEASTER": "not supported: it is an extension of some libraries, not RFC 5545",
	"DTSTART":  "not part of the rule here: the series' first start is its own field (-at)",
	"RRULE":    "the rule must hold one RRULE only",
	"EXDATE":   "not supported: cancel the occurrence instead",
	"RDATE":    "not supported: book the extra date as its own reservation",
}

// parseRule parses the RRULE text (an optional "RRULE:" prefix, parts
// separated by ';', case-insensitive). Each value is read by rrule-go's
// own parser; the checks around it name the part at fault.
func parseRule(text string) (*rule, error) {
	if len(text) > maxRuleLen {
		return nil, ruleErr("", "longer than %d bytes", maxRuleLen)
	}
	text = strings.TrimSpace(text)
	if up := strings.ToUpper(text); strings.HasPrefix(up, "RRULE:") {
		text = text[len("RRULE:"):]
	}
	if text == "" {
		return nil, ruleErr("", "must not be empty: give a rule such as FREQ=WEEKLY;BYDAY=MO;BYHOUR=9")
	}
	r := &rule{interval: 1}
	seen := map[string]bool{}
	for _, part := range strings.Split(text, ";") {
		key, value, ok := strings.Cut(part, "=")
		key = strings.ToUpper(strings.TrimSpace(key))
		value = strings.ToUpper(strings.TrimSpace(value))
		if !ok || key == "" {
			return nil, ruleErr("", "%q is not a rule part NAME=VALUE", part)
		}
		if why, bad := refused[key]; bad {
			return nil, ruleErr(key, "%s", why)
		}
		if !slices.Contains(partOrder, key) {
			return nil, ruleErr(key, "unknown rule part (known: %s)", strings.Join(partOrder, ", "))
		}
		if seen[key] {
			return nil, ruleErr(key, "given twice")
		}
		seen[key] = true
		if value == "" {
			return nil, ruleErr(key, "has no value")
		}
		if err := r.set(key, value); err != nil {
			return nil, err
		}
	}
	if !seen["FREQ"] {
		return nil, ruleErr("FREQ", "missing: every rule needs FREQ (YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY or MINUTELY)")
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return r, nil
}

// libraryParse reads one rule part with rrule-go's parser (behind a FREQ
// part, which the parser requires) and wraps its error with the part.
func libraryParse(key, value string) (*rrule.ROption, error) {
	opt, err := rrule.StrToROption("FREQ=YEARLY;" + key + "=" + value)
	if err != nil {
		return nil, ruleErr(key, "%q: %v", value, err)
	}
	return opt, nil
}

func (r *rule) set(key, value string) error {
	switch key {
	case "FREQ":
		f, err := rrule.StrToFreq(value)
		if err != nil {
			return ruleErr(key, "%q is not a frequency (YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY, MINUTELY)", value)
		}
		if f == rrule.SECONDLY {
			return ruleErr(key, "SECONDLY is not supported: the finest frequency is MINUTELY")
		}
		r.freq = f
		return nil
	case "UNTIL":
		return r.setUntil(value)
	}
	opt, err := libraryParse(key, value)
	if err != nil {
		return err
	}
	switch key {
	case "INTERVAL":
		if opt.Interval < 1 || opt.Interval > maxInterval {
			return ruleErr(key, "%s is out of range 1..%d", value, maxInterval)
		}
		r.interval = opt.Interval
	case "COUNT":
		if opt.Count < 1 {
			return ruleErr(key, "%s must be at least 1", value)
		}
		r.count = opt.Count
	case "BYMONTH":
		r.bymonth, err = intList(key, opt.Bymonth, 1, 12, false)
	case "BYWEEKNO":
		r.byweekno, err = intList(key, opt.Byweekno, 1, 53, true)
	case "BYYEARDAY":
		r.byyearday, err = intList(key, opt.Byyearday, 1, 366, true)
	case "BYMONTHDAY":
		r.bymonthday, err = intList(key, opt.Bymonthday, 1, 31, true)
	case "BYHOUR":
		r.byhour, err = intList(key, opt.Byhour, 0, 23, false)
	case "BYMINUTE":
		r.byminute, err = intList(key, opt.Byminute, 0, 59, false)
	case "BYSETPOS":
		r.bysetpos, err = intList(key, opt.Bysetpos, 1, 366, true)
	case "BYDAY":
		r.byday, err = dayList(opt.Byweekday)
	case "WKST":
		if strings.ContainsAny(value, "+-0123456789") {
			return ruleErr(key, "%q must be a plain weekday (MO..SU)", value)
		}
		r.wkst, r.wkstSet = opt.Wkst, true
	}
	return err
}

// intList sorts and deduplicates a list and checks each value against
// lo..hi (and -hi..-lo when negative values are allowed).
func intList(key string, vs []int, lo, hi int, signed bool) ([]int, error) {
	for _, v := range vs {
		in := v >= lo && v <= hi || signed && v <= -lo && v >= -hi
		if !in {
			if signed {
				return nil, ruleErr(key, "%d is out of range %d..%d or -%d..-%d", v, lo, hi, hi, lo)
			}
			return nil, ruleErr(key, "%d is out of range %d..%d", v, lo, hi)
		}
	}
	out := slices.Clone(vs)
	slices.Sort(out)
	return slices.Compact(out), nil
}

func dayList(ds []rrule.Weekday) ([]rrule.Weekday, error) {
	for _, d := range ds {
		if n := d.N(); n > 53 || n < -53 {
			return nil, ruleErr("BYDAY", "%s: the ordinal is out of range 1..53 or -53..-1", formatDay(d))
		}
	}
	out := slices.Clone(ds)
	slices.SortFunc(out, func(a, b rrule.Weekday) int {
		return cmp.Or(cmp.Compare(a.Day(), b.Day()), cmp.Compare(a.N(), b.N()))
	})
	return slices.CompactFunc(out, func(a, b rrule.Weekday) bool { return a.Day() == b.Day() && a.N() == b.N() }), nil
}

func (r *rule) setUntil(value string) error {
	switch {
	case len(value) == len("20060102T150405Z") && strings.HasSuffix(value, "Z"):
		t, err := time.Parse("20060102T150405Z", value)
		if err != nil {
			return ruleErr("UNTIL", "%q is not a UTC date-time YYYYMMDDTHHMMSSZ", value)
		}
		r.untilUTC = t
	case len(value) == len("20060102"):
		t, err := time.Parse("20060102", value)
		if err != nil {
			return ruleErr("UNTIL", "%q is not a date YYYYMMDD", value)
		}
		r.untilDate = civilOf(t)
	case len(value) == len("20060102T150405"):
		return ruleErr("UNTIL", "%q has no zone: RFC 5545 wants UTC (end it in Z), or give a date YYYYMMDD for the last local day", value)
	default:
		return ruleErr("UNTIL", "%q is neither a UTC date-time YYYYMMDDTHHMMSSZ nor a date YYYYMMDD", value)
	}
	r.until = value
	return nil
}

// check applies the rules of RFC 5545 §3.3.10 that tie parts together.
func (r *rule) check() error {
	switch {
	case r.count != 0 && r.until != "":
		return ruleErr("COUNT", "COUNT and UNTIL must not both be given")
	case len(r.bymonthday) > 0 && r.freq == rrule.WEEKLY:
		return ruleErr("BYMONTHDAY", "not allowed with FREQ=WEEKLY")
	case len(r.byyearday) > 0 && (r.freq == rrule.DAILY || r.freq == rrule.WEEKLY || r.freq == rrule.MONTHLY):
		return ruleErr("BYYEARDAY", "not allowed with FREQ=%s", r.freq)
	case len(r.byweekno) > 0 && r.freq != rrule.YEARLY:
		return ruleErr("BYWEEKNO", "only allowed with FREQ=YEARLY")
	case len(r.bysetpos) > 0 && len(r.bymonth)+len(r.byweekno)+len(r.byyearday)+len(r.bymonthday)+len(r.byday)+len(r.byhour)+len(r.byminute) == 0:
		return ruleErr("BYSETPOS", "needs another BYxxx part to select from")
	}
	for _, d := range r.byday {
		n := d.N()
		switch {
		case n == 0:
		case r.freq != rrule.MONTHLY && r.freq != rrule.YEARLY:
			return ruleErr("BYDAY", "%s: an ordinal weekday needs FREQ=MONTHLY or YEARLY", formatDay(d))
		case r.freq == rrule.YEARLY && len(r.byweekno) > 0:
			return ruleErr("BYDAY", "%s: an ordinal weekday is not allowed with BYWEEKNO", formatDay(d))
		case (r.freq == rrule.MONTHLY || len(r.bymonth) > 0) && (n > 5 || n < -5):
			return ruleErr("BYDAY", "%s: a month has at most 5 of each weekday", formatDay(d))
		}
	}
	// A month day that no listed month has (BYMONTH=2;BYMONTHDAY=30)
	// would make the rule empty; say so rather than search for it.
	if len(r.bymonth) > 0 && len(r.bymonthday) > 0 {
		ok := false
		for _, m := range r.bymonth {
			for _, d := range r.bymonthday {
				if abs(d) <= daysInMonthMax[m] {
					ok = true
				}
			}
		}
		if !ok {
			return ruleErr("BYMONTHDAY", "no day of %v exists in the months of BYMONTH %v; the rule has no occurrence", r.bymonthday, r.bymonth)
		}
	}
	return nil
}

// daysInMonthMax is the longest each month gets (February in a leap year).
var daysInMonthMax = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// String prints the rule in canonical form: parts in partOrder, lists
// sorted without duplicates, INTERVAL=1 and WKST=MO (the defaults) left
// out, ordinal weekdays as 1FR / -1SU.
func (r *rule) String() string {
	parts := []string{"FREQ=" + r.freq.String()}
	if r.interval != 1 {
		parts = append(parts, "INTERVAL="+strconv.Itoa(r.interval))
	}
	if r.count != 0 {
		parts = append(parts, "COUNT="+strconv.Itoa(r.count))
	}
	if r.until != "" {
		parts = append(parts, "UNTIL="+r.until)
	}
	ints := func(key string, vs []int) {
		if len(vs) == 0 {
			return
		}
		s := make([]string, len(vs))
		for i, v := range vs {
			s[i] = strconv.Itoa(v)
		}
		parts = append(parts, key+"="+strings.Join(s, ","))
	}
	ints("BYMONTH", r.bymonth)
	ints("BYWEEKNO", r.byweekno)
	ints("BYYEARDAY", r.byyearday)
	ints("BYMONTHDAY", r.bymonthday)
	if len(r.byday) > 0 {
		s := make([]string, len(r.byday))
		for i, d := range r.byday {
			s[i] = formatDay(d)
		}
		parts = append(parts, "BYDAY="+strings.Join(s, ","))
	}
	ints("BYHOUR", r.byhour)
	ints("BYMINUTE", r.byminute)
	ints("BYSETPOS", r.bysetpos)
	if r.wkstSet && r.wkst.Day() != rrule.MO.Day() {
		parts = append(parts, "WKST="+formatDay(r.wkst))
	}
	return strings.Join(parts, ";")
}

var dayNames = [7]string{"MO", "TU", "WE", "TH", "FR", "SA", "SU"}

func formatDay(d rrule.Weekday) string {
	if d.N() == 0 {
		return dayNames[d.Day()]
	}
	return fmt.Sprintf("%d%s", d.N(), dayNames[d.Day()])
}

// option is the rule as rrule-go's options, anchored at the floating
// DTSTART. COUNT and UNTIL are left out: they are applied to the
// resolved instants (see walk), since the library's COUNT and UNTIL would
// count wall-clock times that may not be distinct instants.
func (r *rule) option(dtstart time.Time) rrule.ROption {
	return rrule.ROption{
		Freq:       r.freq,
		Dtstart:    dtstart,
		Interval:   r.interval,
		Wkst:       r.wkst,
		Bysetpos:   r.bysetpos,
		Bymonth:    r.bymonth,
		Bymonthday: r.bymonthday,
		Byyearday:  r.byyearday,
		Byweekno:   r.byweekno,
		Byweekday:  r.byday,
		Byhour:     r.byhour,
		Byminute:   r.byminute,
	}
}

// minSpacing is a lower bound, in seconds of wall-clock time, on the time
// between two consecutive starts of the rule anchored at start. It is
// worked out from the rule's times of day, without expanding anything:
// starts on one day are at least the smallest gap between those times
// apart, and starts on different days at least a day minus the spread of
// those times. For HOURLY and MINUTELY the step is FREQ × INTERVAL, less
// the spread of the minutes within an hour. The bound is conservative: a
// weekly rule at 00:30 and 23:30 is taken as one hour apart (Sunday 23:30
// to Monday 00:30 could be consecutive), whether or not it has both days.
func (r *rule) minSpacing(start civil) int64 {
	switch r.freq {
	case rrule.MINUTELY:
		return int64(r.interval) * 60
	case rrule.HOURLY:
		mins := r.byminute
		if len(mins) == 0 {
			mins = []int{start.min}
		}
		return spacing(mins, 60, int64(r.interval)*3600)
	}
	hours, mins := r.byhour, r.byminute
	if len(hours) == 0 {
		hours = []int{start.hour}
	}
	if len(mins) == 0 {
		mins = []int{start.min}
	}
	var times []int
	for _, h := range hours {
		for _, m := range mins {
			times = append(times, h*60+m)
		}
	}
	slices.Sort(times)
	return spacing(times, 60, 86400)
}

// spacing returns the smallest gap between consecutive sorted values (in
// units of unit seconds) and across the wrap to the next period.
func spacing(sorted []int, unit, period int64) int64 {
	best := period - int64(sorted[len(sorted)-1]-sorted[0])*unit
	for i := 1; i < len(sorted); i++ {
		best = min(best, int64(sorted[i]-sorted[i-1])*unit)
	}
	return best
}

// explicitOption is option anchored at dtstart, with the defaults that
// RFC 5545 (and rrule-go) would take from the original DTSTART start
// written out, so that they do not change with the anchor.
func (r *rule) explicitOption(dtstart time.Time, start civil) rrule.ROption {
	o := r.option(dtstart)
	noDay := len(r.byweekno) == 0 && len(r.byyearday) == 0 && len(r.bymonthday) == 0 && len(r.byday) == 0
	if noDay {
		switch r.freq {
		case rrule.YEARLY:
			if len(o.Bymonth) == 0 {
				o.Bymonth = []int{int(start.month)}
			}
			o.Bymonthday = []int{start.day}
		case rrule.MONTHLY:
			o.Bymonthday = []int{start.day}
		case rrule.WEEKLY:
			wd := time.Date(start.year, start.month, start.day, 0, 0, 0, 0, time.UTC).Weekday()
			o.Byweekday = []rrule.Weekday{[7]rrule.Weekday{rrule.SU, rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA}[wd]}
		}
	}
	if r.freq < rrule.HOURLY && len(o.Byhour) == 0 {
		o.Byhour = []int{start.hour}
	}
	if r.freq < rrule.MINUTELY && len(o.Byminute) == 0 {
		o.Byminute = []int{start.min}
	}
	o.Bysecond = []int{start.sec}
	return o
}

// checkReachable refuses an HOURLY or MINUTELY rule whose BYHOUR/BYMINUTE
// values the INTERVAL steps from DTSTART never reach (FREQ=HOURLY;
// INTERVAL=4;BYHOUR=0 from 02:45 visits 2, 6, 10, 14, 18 and 22 only).
// rrule-go searches such a rule's next time in a loop that never ends,
// so it must not get one. The steps from DTSTART visit exactly the
// minutes of the day congruent to DTSTART's modulo gcd(step, one day).
func (r *rule) checkReachable(start civil) error {
	var step int
	switch r.freq {
	case rrule.HOURLY:
		step = r.interval * 60
	case rrule.MINUTELY:
		step = r.interval
	default:
		return nil
	}
	if len(r.byhour) == 0 && len(r.byminute) == 0 {
		return nil
	}
	g := gcd(step, 1440)
	t0 := start.hour*60 + start.min
	for t := t0 % g; t < 1440; t += g {
		h, m := t/60, t%60
		okH := len(r.byhour) == 0 || slices.Contains(r.byhour, h)
		// HOURLY keeps DTSTART's minute unless BYMINUTE expands it.
		okM := r.freq == rrule.HOURLY || len(r.byminute) == 0 || slices.Contains(r.byminute, m)
		if okH && okM {
			return nil
		}
	}
	part := "BYHOUR"
	if len(r.byhour) == 0 {
		part = "BYMINUTE"
	}
	return ruleErr(part, "never reached: FREQ=%s;INTERVAL=%d from %02d:%02d only visits times of day %d minutes apart", r.freq, r.interval, start.hour, start.min, g)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
