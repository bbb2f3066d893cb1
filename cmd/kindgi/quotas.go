package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/pgstore"
)

const quotasUsage = `quotas show --database-url URL --tenant ID [--json]

show prints each quota of the tenant as its last use defined it (name,
scope, tool, onExceeded), what its sliding window holds now against its
limit, and when the oldest unit in the window leaves it (the window
frees). Quotas are declared in the tenant's policy (bindings.TenantPolicy
quotas); a quota no turn has used yet is not listed. It only reads.`

// quotaView is one line of quotas show (and its JSON).
type quotaView struct {
	bindings.QuotaUsage
	Remaining float64 `json:"remaining"`
}

func runQuotas(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, code, ok := newStoreCommand("quotas", []string{"show"}, quotasUsage, args, stdout, stderr)
	if !ok {
		return code
	}
	sf := c.sf
	check := func(rest []string) string {
		if len(rest) > 0 {
			return fmt.Sprintf("unexpected arguments %q", rest)
		}
		return ""
	}
	return c.run(ctx, args[1:], stderr, check, func(store *pgstore.Store, _ []string) int {
		us, err := store.QuotaUsage(ctx, *sf.tenant, time.Time{})
		if err != nil {
			fmt.Fprintf(stderr, "kindgi quotas show: %s\n", errLine(err))
			return exitFailure
		}
		views := make([]quotaView, len(us))
		for i, u := range us {
			views[i] = quotaView{QuotaUsage: u, Remaining: max(u.Quota.Limit-u.Used, 0)}
		}
		if *sf.asJSON {
			return printJSON(views, stdout, stderr)
		}
		printQuotas(views, stdout)
		return exitOK
	})
}

func printQuotas(views []quotaView, stdout io.Writer) {
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "QUOTA\tSCOPE\tTOOL\tUSED\tLIMIT\tWINDOW\tON EXCEEDED\tFREES")
	for _, v := range views {
		q := v.Quota
		tool, onExceeded, frees := q.ToolID, q.OnExceeded, "-"
		if tool == "" {
			tool = "-"
		}
		if onExceeded == "" {
			onExceeded = bindings.QuotaFail
		}
		if !v.FreesAt.IsZero() {
			frees = stamp(v.FreesAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Name, q.Scope, tool, amount(v.Used), amount(q.Limit), q.Window(), onExceeded, frees)
	}
	_ = tw.Flush()
}

// amount prints a count whole and an amount of dollars as it is.
func amount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
