package peers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ledgerd/ledgerd/benchmarks/service"
)

// Postgres books on one PostgreSQL server: a resources table and a bookings
// table; each admission runs in a transaction that takes the resource's row
// lock (SELECT ... FOR UPDATE), reads the overlapping bookings, decides fit
// on the client and inserts or updates.
type Postgres struct {
	pool *pgxpool.Pool
}

const pgSchema = `
CREATE TABLE IF NOT EXISTS resources (
	name     text PRIMARY KEY,
	capacity bigint NOT NULL CHECK (capacity > 0)
);
CREATE TABLE IF NOT EXISTS bookings (
	id       bigserial PRIMARY KEY,
	resource text NOT NULL REFERENCES resources(name),
	start_ms bigint NOT NULL,
	end_ms   bigint NOT NULL,
	amount   bigint NOT NULL,
	state    smallint NOT NULL
);
CREATE INDEX IF NOT EXISTS bookings_resource_end ON bookings (resource, end_ms);
`

// NewPostgres connects a pool of at most conns connections to dsn and
// creates the schema.
func NewPostgres(ctx context.Context, dsn string, conns int32) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres dsn: %w", err)
	}
	if conns > 0 {
		cfg.MaxConns = conns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres connect: %w", err)
	}
	if _, err := pool.Exec(ctx, pgSchema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres schema: %w", err)
	}
	return &Postgres{pool: pool}, nil
}

// Name implements service.System.
func (p *Postgres) Name() string { return "postgresql" }

// Setup implements service.System.
func (p *Postgres) Setup(ctx context.Context, resources []string, capacity int64) error {
	b := &pgx.Batch{}
	for _, r := range resources {
		b.Queue(`INSERT INTO resources (name, capacity) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, r, capacity)
	}
	if err := p.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres setup: %w", err)
	}
	return nil
}

// admit runs fn's decision under the resource's row lock. skip leaves one
// booking (being modified) out of the fit.
func (p *Postgres) admit(ctx context.Context, s service.Shape, skip int64, write func(tx pgx.Tx, start int64) error) (int64, error) {
	var start int64
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var capacity int64
		if err := tx.QueryRow(ctx, `SELECT capacity FROM resources WHERE name = $1 FOR UPDATE`, s.Resource).Scan(&capacity); err != nil {
			return fmt.Errorf("lock resource %s: %w", s.Resource, err)
		}
		rows, err := tx.Query(ctx, `SELECT start_ms, end_ms, amount FROM bookings
			WHERE resource = $1 AND end_ms > $2 AND start_ms < $3 AND id <> $4`, s.Resource, s.NotBefore, s.Deadline, skip)
		if err != nil {
			return fmt.Errorf("read bookings: %w", err)
		}
		var bs []service.Interval
		for rows.Next() {
			var iv service.Interval
			if err := rows.Scan(&iv.Start, &iv.End, &iv.Amount); err != nil {
				rows.Close()
				return fmt.Errorf("scan booking: %w", err)
			}
			bs = append(bs, iv)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read bookings: %w", err)
		}
		st, ok := service.EarliestFit(bs, capacity, s.Amount, s.Duration, s.NotBefore, s.Deadline)
		if !ok {
			return service.ErrRejected
		}
		start = st
		return write(tx, st)
	})
	return start, err
}

func (p *Postgres) insert(ctx context.Context, s service.Shape, state int) (service.Booking, error) {
	var id int64
	start, err := p.admit(ctx, s, 0, func(tx pgx.Tx, st int64) error {
		return tx.QueryRow(ctx, `INSERT INTO bookings (resource, start_ms, end_ms, amount, state)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, s.Resource, st, st+s.Duration, s.Amount, state).Scan(&id)
	})
	if err != nil {
		return service.Booking{}, err
	}
	return service.Booking{ID: strconv.FormatInt(id, 10), Shape: s, Start: start}, nil
}

// Reserve implements service.System.
func (p *Postgres) Reserve(ctx context.Context, s service.Shape) (service.Booking, error) {
	return p.insert(ctx, s, stateCommitted)
}

// HoldCommit implements service.System: a held row, then an update that
// commits it.
func (p *Postgres) HoldCommit(ctx context.Context, s service.Shape) (service.Booking, error) {
	b, err := p.insert(ctx, s, stateHeld)
	if err != nil {
		return b, err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE bookings SET state = $2 WHERE id = $1 AND state = $3`, b.ID, stateCommitted, stateHeld)
	if err != nil {
		return b, fmt.Errorf("commit %s: %w", b.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return b, fmt.Errorf("commit %s: %w", b.ID, errNotFound)
	}
	return b, nil
}

// Modify implements service.System.
func (p *Postgres) Modify(ctx context.Context, b service.Booking, s service.Shape) (service.Booking, error) {
	id, err := strconv.ParseInt(b.ID, 10, 64)
	if err != nil {
		return b, fmt.Errorf("booking id %q: %w", b.ID, err)
	}
	if s.Resource != b.Shape.Resource {
		return b, fmt.Errorf("modify: resource %q: must stay %q", s.Resource, b.Shape.Resource)
	}
	start, err := p.admit(ctx, s, id, func(tx pgx.Tx, st int64) error {
		tag, err := tx.Exec(ctx, `UPDATE bookings SET start_ms = $2, end_ms = $3, amount = $4 WHERE id = $1`, id, st, st+s.Duration, s.Amount)
		if err == nil && tag.RowsAffected() != 1 {
			err = errNotFound
		}
		return err
	})
	if err != nil {
		return b, err
	}
	return service.Booking{ID: b.ID, Shape: s, Start: start}, nil
}

// Cancel implements service.System.
func (p *Postgres) Cancel(ctx context.Context, b service.Booking) error {
	tag, err := p.pool.Exec(ctx, `DELETE FROM bookings WHERE id = $1`, b.ID)
	if err != nil {
		return fmt.Errorf("cancel %s: %w", b.ID, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("cancel %s: %w", b.ID, errNotFound)
	}
	return nil
}

// Read implements service.System.
func (p *Postgres) Read(ctx context.Context, b service.Booking) error {
	var st int64
	if err := p.pool.QueryRow(ctx, `SELECT start_ms FROM bookings WHERE id = $1`, b.ID).Scan(&st); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotFound
		}
		return fmt.Errorf("read %s: %w", b.ID, err)
	}
	return nil
}

// ErrorCode implements service.System: the SQLSTATE where there is one.
func (p *Postgres) ErrorCode(err error) string {
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		return "sqlstate_" + pe.Code
	case errors.Is(err, errNotFound):
		return "not_found"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "other"
}

// Verify implements service.Verifier.
func (p *Postgres) Verify(ctx context.Context) (int, error) {
	rows, err := p.pool.Query(ctx, `SELECT b.resource, r.capacity, b.start_ms, b.end_ms, b.amount
		FROM bookings b JOIN resources r ON r.name = b.resource ORDER BY b.resource`)
	if err != nil {
		return 0, fmt.Errorf("postgres read back: %w", err)
	}
	defer rows.Close()
	n := 0
	var cur string
	var capacity int64
	var bs []service.Interval
	check := func() error {
		if err := service.Overbooked(bs, capacity); err != nil {
			return fmt.Errorf("resource %s: %w", cur, err)
		}
		return nil
	}
	for rows.Next() {
		var r string
		var c int64
		var iv service.Interval
		if err := rows.Scan(&r, &c, &iv.Start, &iv.End, &iv.Amount); err != nil {
			return n, fmt.Errorf("postgres read back: %w", err)
		}
		if r != cur {
			if err := check(); err != nil {
				return n, err
			}
			cur, capacity, bs = r, c, bs[:0]
		}
		bs = append(bs, iv)
		n++
	}
	if err := rows.Err(); err != nil {
		return n, fmt.Errorf("postgres read back: %w", err)
	}
	return n, check()
}

// Close implements service.System.
func (p *Postgres) Close() error {
	p.pool.Close()
	return nil
}
