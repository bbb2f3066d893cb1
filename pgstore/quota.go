package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kindgi/agents/bindings"
)

var _ bindings.QuotaCounter = (*Store)(nil)

// sqlLockQuota records the quota's definition ($1 tenant … $8 now) and
// locks its row for the transaction: ON CONFLICT DO UPDATE locks the
// conflicting row even when its WHERE leaves it as it is, so every take
// and add of one quota waits for the one before it to commit.
const sqlLockQuota = `INSERT INTO agent_quotas AS q
	(tenant_id, name, scope, tool_id, quota_limit, window_seconds, on_exceeded, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	ON CONFLICT (tenant_id, name) DO UPDATE
	SET scope = excluded.scope, tool_id = excluded.tool_id, quota_limit = excluded.quota_limit,
	    window_seconds = excluded.window_seconds, on_exceeded = excluded.on_exceeded, updated_at = excluded.updated_at
	WHERE (q.scope, q.tool_id, q.quota_limit, q.window_seconds, q.on_exceeded)
	    IS DISTINCT FROM (excluded.scope, excluded.tool_id, excluded.quota_limit, excluded.window_seconds, excluded.on_exceeded)`

// quotaWindow is the window of quota ($1, $2) of $7 seconds before $4
// (win) and its sum (used), for sqlTakeQuota and sqlCheckQuota.
const quotaWindow = `win AS (
		SELECT at, unit, amount FROM agent_quota_units
		WHERE tenant_id = $1 AND quota = $2 AND at > $4::timestamptz - make_interval(secs => $7::bigint)
	), used AS (
		SELECT coalesce(sum(amount), 0)::float8 AS used FROM win
	)`

// quotaFrees is the time of the window's unit whose leaving makes room
// for $5 under the limit $6 (NULL: none does), as bindings.QuotaFits
// decides room.
const quotaFrees = `(SELECT min(at) FROM (
		SELECT at, (SELECT used FROM used) - sum(amount) OVER (ORDER BY at, unit COLLATE "C") AS rest FROM win
	) w WHERE CASE WHEN $5::float8 = 0 THEN w.rest < $6::float8 ELSE w.rest + $5::float8 <= $6::float8 END)`

// sqlTakeQuota counts unit $3 of quota ($1, $2) at $4 with amount $5,
// under the quota's lock (sqlLockQuota, the statement before it in the
// same transaction, so this one's snapshot sees every take committed
// before): when the unit is not counted yet and either $8 (an add) or
// the window of $7 seconds before $4 has room ($5 > 0 and used + $5 <=
// $6). It returns whether the unit was counted before, whether it is
// counted now, what the window held before, and quotaFrees. It forgets
// the units past the window and $9 seconds of retention
// (bindings.QuotaUnitRetention).
const sqlTakeQuota = `WITH gone AS (
		DELETE FROM agent_quota_units
		WHERE tenant_id = $1 AND quota = $2 AND at <= $4::timestamptz - make_interval(secs => $7::bigint) - make_interval(secs => $9::bigint)
	), ` + quotaWindow + `, had AS (
		SELECT EXISTS (SELECT 1 FROM agent_quota_units WHERE tenant_id = $1 AND quota = $2 AND unit = $3) AS had
	), ins AS (
		INSERT INTO agent_quota_units (tenant_id, quota, unit, at, amount)
		SELECT $1, $2, $3, $4, $5
		WHERE NOT (SELECT had FROM had)
		  AND ($8::boolean OR ($5::float8 > 0 AND (SELECT used FROM used) + $5::float8 <= $6::float8))
		ON CONFLICT DO NOTHING
		RETURNING 1
	)
	SELECT (SELECT had FROM had), EXISTS (SELECT 1 FROM ins), (SELECT used FROM used), ` + quotaFrees

// sqlCheckQuota is a take of amount 0 (a check: it records nothing), read
// only: no lock, no write, so no commit to flush. Its parameters are
// sqlTakeQuota's first seven ($5 is 0).
const sqlCheckQuota = `WITH ` + quotaWindow + `
	SELECT EXISTS (SELECT 1 FROM agent_quota_units WHERE tenant_id = $1 AND quota = $2 AND unit = $3),
		false, (SELECT used FROM used), ` + quotaFrees

// sqlQuotaUsage lists a tenant's quotas with the use of their windows
// ending at $2.
const sqlQuotaUsage = `SELECT q.name, q.scope, q.tool_id, q.quota_limit, q.window_seconds, q.on_exceeded,
		coalesce(sum(u.amount), 0)::float8, min(u.at)
	FROM agent_quotas q
	LEFT JOIN agent_quota_units u ON u.tenant_id = q.tenant_id AND u.quota = q.name
		AND u.at > $2::timestamptz - make_interval(secs => q.window_seconds)
	WHERE q.tenant_id = $1
	GROUP BY q.name, q.scope, q.tool_id, q.quota_limit, q.window_seconds, q.on_exceeded
	ORDER BY q.name COLLATE "C"`

// Take implements bindings.QuotaCounter in one round trip: the quota's
// row lock, then the count (sqlTakeQuota).
func (s *Store) Take(ctx context.Context, in bindings.QuotaTakeInput) (bindings.QuotaTakeResult, error) {
	return s.count(ctx, in, false)
}

// Add implements bindings.QuotaCounter as Take does.
func (s *Store) Add(ctx context.Context, in bindings.QuotaTakeInput) (bindings.QuotaTakeResult, error) {
	return s.count(ctx, in, true)
}

func (s *Store) count(ctx context.Context, in bindings.QuotaTakeInput, add bool) (bindings.QuotaTakeResult, error) {
	if err := bindings.CheckQuotaTake(in); err != nil {
		return bindings.QuotaTakeResult{}, err
	}
	now := s.stamp(in.Now)
	q := in.Quota
	var had, counted bool
	var used float64
	var frees *time.Time
	check := in.Amount == 0 && !add
	args := []any{in.TenantID, q.Name, in.Unit, now, in.Amount, q.Limit, q.WindowSeconds}
	err := s.batch(ctx, "take quota", in.TenantID, func(b *pgx.Batch) {
		if check {
			b.Queue(sqlCheckQuota, args...)
			return
		}
		b.Queue(sqlLockQuota, in.TenantID, q.Name, q.Scope, q.ToolID, q.Limit, q.WindowSeconds, q.OnExceeded, now)
		b.Queue(sqlTakeQuota, append(args, add, int64(bindings.QuotaUnitRetention/time.Second))...)
	}, func(br pgx.BatchResults) error {
		if !check {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return br.QueryRow().Scan(&had, &counted, &used, &frees)
	})
	if err != nil {
		return bindings.QuotaTakeResult{}, err
	}
	switch {
	case had:
		return bindings.QuotaTakeResult{Allowed: true, Used: used}, nil
	case counted:
		return bindings.QuotaTakeResult{Allowed: true, Used: used + in.Amount}, nil
	case in.Amount == 0 && bindings.QuotaFits(used, 0, q.Limit):
		return bindings.QuotaTakeResult{Allowed: true, Used: used}, nil // a check
	}
	res := bindings.QuotaTakeResult{Used: used}
	if frees != nil && in.Amount <= q.Limit {
		res.RetryAfter = max(frees.Add(q.Window()).Sub(now), time.Microsecond)
	}
	return res, nil
}

// QuotaUsage implements bindings.QuotaCounter.
func (s *Store) QuotaUsage(ctx context.Context, tenantID string, now time.Time) ([]bindings.QuotaUsage, error) {
	if err := bindings.CheckID("tenant id", tenantID); err != nil {
		return nil, err
	}
	out := []bindings.QuotaUsage{}
	err := s.batch(ctx, "quota usage", tenantID, func(b *pgx.Batch) {
		b.Queue(sqlQuotaUsage, tenantID, s.stamp(now))
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(row pgx.CollectableRow) (bindings.QuotaUsage, error) {
			var u bindings.QuotaUsage
			var oldest *time.Time
			err := row.Scan(&u.Quota.Name, &u.Quota.Scope, &u.Quota.ToolID, &u.Quota.Limit, &u.Quota.WindowSeconds, &u.Quota.OnExceeded, &u.Used, &oldest)
			if oldest != nil {
				u.FreesAt = oldest.Add(u.Quota.Window()).UTC()
			}
			return u, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
