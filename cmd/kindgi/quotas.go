package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kindgi/agents/bindings"
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
	if code, ok := subcommand("quotas", []string{"show"}, quotasUsage, args, stdout, stderr); !ok {
		return code
	}
	fs := newFlags("quotas show", quotasUsage, stderr)
	sf := addStoreFlags(fs)
	rest, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return flagExit(err)
	}
	switch missing := sf.missing(); {
	case missing != "":
		fmt.Fprintln(stderr, "kindgi quotas show: "+missing)
	case len(rest) > 0:
		fmt.Fprintf(stderr, "kindgi quotas show: unexpected arguments %q\n", rest)
	default:
		store, closeFn, ok := sf.open(ctx, "quotas show", stderr)
		if !ok {
			return exitFailure
		}
		defer closeFn()
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
	}
	fs.Usage()
	return exitUsage
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
