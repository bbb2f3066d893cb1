package packserver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Environment variables of the process contract.
const (
	EnvToken          = "KINDGI_PACK_SERVICE_TOKEN"
	EnvPort           = "PORT"
	EnvMaxConcurrency = "KINDGI_PACK_SERVICE_MAX_CONCURRENCY"
)

// DrainTimeout bounds how long SIGTERM waits for calls in progress.
const DrainTimeout = 8 * time.Second

// DefaultPort is the port used when PORT is unset.
const DefaultPort = 8080

// Main is the whole main function of a pack service binary:
//
//	func main() { packserver.Main(demo.Module()) }
//
// It reads the flags and environment of the process contract, removes
// KINDGI_PACK_SERVICE_TOKEN from the environment, loads the index, checks
// and initialises every module the index names, listens, and serves until
// SIGTERM (or SIGINT), which drains calls in progress for up to
// DrainTimeout. It exits 0 after a drain and 1 when the service cannot
// start, having written one {"kind":"boot-failed","problems":[…]} line on
// stderr. Main never returns.
func Main(modules ...Module) {
	os.Exit(run(os.Args[1:], modules, os.Stderr))
}

// bootLine and listeningLine are the JSON lines of the process contract.
type bootLine struct {
	Kind     string   `json:"kind"`
	Problems []string `json:"problems"`
}

type listeningLine struct {
	Kind            string `json:"kind"`
	Port            int    `json:"port"`
	Host            string `json:"host"`
	PackID          string `json:"packId"`
	PackVersion     string `json:"packVersion"`
	ArtifactVersion string `json:"artifactVersion"`
	MaxConcurrency  int    `json:"maxConcurrency"`
	Ready           bool   `json:"ready"`
}

// config is the process contract's input.
type config struct {
	index, moduleRoot, host string
	token                   string
	port, maxConcurrency    int
}

// readConfig parses flags and environment. It unsets the token variable
// whatever else fails, so no module can see it.
func readConfig(args []string) (config, []string) {
	var cfg config
	var problems []string
	cfg.token = os.Getenv(EnvToken)
	scrubEnvValue(EnvToken)
	if err := os.Unsetenv(EnvToken); err != nil {
		problems = append(problems, "removing "+EnvToken+" from the environment: "+err.Error())
	}
	fs := flag.NewFlagSet("pack-service", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.index, "index", "", "path of the index file (relative paths resolve against --module-root)")
	fs.StringVar(&cfg.moduleRoot, "module-root", "", "base directory of the pack's files (default: the working directory)")
	fs.StringVar(&cfg.host, "host", "0.0.0.0", "address to listen on")
	if err := fs.Parse(args); err != nil {
		problems = append(problems, "arguments: "+err.Error())
	} else if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("arguments: unexpected %q", fs.Args()))
	}
	if cfg.index == "" {
		problems = append(problems, "--index is required")
	} else if !filepath.IsAbs(cfg.index) && cfg.moduleRoot != "" {
		cfg.index = filepath.Join(cfg.moduleRoot, cfg.index)
	}
	if cfg.token == "" {
		problems = append(problems, EnvToken+" is unset or empty")
	}
	cfg.port = DefaultPort
	if v := os.Getenv(EnvPort); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 65535 {
			problems = append(problems, fmt.Sprintf("%s=%q is not a port number", EnvPort, v))
		}
		cfg.port = n
	}
	if v := os.Getenv(EnvMaxConcurrency); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			problems = append(problems, fmt.Sprintf("%s=%q is not a whole number ≥ 0", EnvMaxConcurrency, v))
		}
		cfg.maxConcurrency = n
	}
	return cfg, problems
}

// run is Main without the exit, for tests of the argument handling.
func run(args []string, modules []Module, stderr io.Writer) int {
	bootFailed := func(problems []string) int {
		line, _ := json.Marshal(bootLine{Kind: CodeBootFailed, Problems: problems})
		fmt.Fprintf(stderr, "%s\n", line)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	cfg, problems := readConfig(args)
	if len(problems) > 0 {
		return bootFailed(problems)
	}
	idx, err := LoadIndex(cfg.index)
	if err != nil {
		return bootFailed(bootProblems(err))
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	srv, err := New(ctx, idx, modules, &Options{Token: cfg.token, MaxConcurrency: cfg.maxConcurrency, Logger: logger})
	if err != nil {
		return bootFailed(bootProblems(err))
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.host, strconv.Itoa(cfg.port)))
	if err != nil {
		return bootFailed([]string{"listen: " + err.Error()})
	}
	// Calls see this context: cancelling it after an unfinished drain
	// cancels the handlers still running.
	base, cancelCalls := context.WithCancel(context.Background())
	defer cancelCalls()
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()

	line, _ := json.Marshal(listeningLine{
		Kind: "listening", Port: ln.Addr().(*net.TCPAddr).Port, Host: cfg.host,
		PackID: idx.PackID, PackVersion: idx.PackVersion, ArtifactVersion: idx.ArtifactVersion,
		MaxConcurrency: cfg.maxConcurrency, Ready: srv.Ready(),
	})
	fmt.Fprintf(stderr, "%s\n", line)

	select {
	case err := <-serveErr:
		logger.Error("serve failed", "error", err.Error())
		return 1
	case <-ctx.Done():
	}
	stop() // a second SIGTERM now kills the process the default way
	drainCtx, cancelDrain := context.WithTimeout(context.Background(), DrainTimeout)
	drainErr := srv.Drain(drainCtx)
	cancelDrain()
	if drainErr != nil {
		logger.Warn("drain timed out; cancelling the calls still running", "inFlight", srv.InFlight())
		cancelCalls()
	}
	// Finish writing the answers of the calls that just ended.
	shutCtx, cancelShut := context.WithTimeout(context.Background(), time.Second)
	defer cancelShut()
	if err := hs.Shutdown(shutCtx); err != nil {
		_ = hs.Close()
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("serve failed", "error", err.Error())
	}
	fmt.Fprintf(stderr, "%s\n", `{"kind":"stopped"}`)
	return 0
}

func bootProblems(err error) []string {
	var be *BootError
	if errors.As(err, &be) {
		return be.Problems
	}
	return []string{err.Error()}
}
