package ledger

// CoSub is one sub-request of a co-reservation: Amount units over
// [Start, Start+Duration) (Unix ms).
type CoSub struct {
	Amount, Start, Duration int64
}

// CoReserveArgs are the arguments of Ledger.CoReserve.
type CoReserveArgs struct {
	Write
	ID         string // empty: the ledger assigns one
	Subs       []CoSub
	Candidates []string
	MinJoint   uint32 // permille
	Labels     map[string]string
}
