package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// GenerateStream sends the request with "stream": true and
// "stream_options": {"include_usage": true}, calls onDelta for every piece
// of text and of tool-call arguments as its chunk arrives, and returns the
// assembled response: what Generate returns for the same answer.
//
// The stream is read as Server-Sent Events: comments (keep-alives) are
// skipped, "data: [DONE]" ends it, a chunk without choices (the final
// usage chunk) only sets the usage, and tool-call deltas are assembled by
// their index. A chunk with an error, or a stream that ends before [DONE]
// (and before a finish reason), fails with *agents.ModelInvocationError.
// A server that does not stream and answers with application/json is read
// as Generate reads it, the whole answer delivered as deltas at once.
// Such a failure, like a 429 or 5xx answer, is retried (with the same
// Idempotency-Key) only while nothing has been delivered to onDelta:
// once the caller has seen part of an answer, the failure is returned and
// the caller decides. Cancelling ctx closes the connection at once.
func (p *Provider) GenerateStream(ctx context.Context, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	names := modelhttp.ToolNames(req.Tools)
	return p.c.GenerateStream(ctx, req, p.encodeRequest(req, names, true), onDelta,
		func(resp *http.Response) (bindings.GenerateResponse, error) {
			return p.readResponse(ctx, req, names, resp)
		},
		func(body io.Reader, emit func(bindings.Delta)) (func() (bindings.GenerateResponse, error), error) {
			a := &streamAssembler{names: names, emit: emit}
			if err := a.read(body); err != nil {
				return nil, err
			}
			return func() (bindings.GenerateResponse, error) { return p.assemble(req, names, a.choice(), a.model, a.usage) }, nil
		})
}

// streamAssembler folds the chunks of one streamed answer.
type streamAssembler struct {
	names modelhttp.NameMap
	emit  func(bindings.Delta)

	model        string
	content      strings.Builder
	hasContent   bool
	refusal      strings.Builder
	hasRefusal   bool
	calls        []*callBuilder
	byIndex      map[int]*callBuilder
	finishReason string
	usage        usage
}

type callBuilder struct {
	pos        int
	id, name   string
	args       strings.Builder
	introduced bool
}

var (
	errStreamEnded = errors.New("the stream ended before the answer was complete")
	errBadChunk    = errors.New("the stream sent a chunk that is not JSON")
)

// read consumes the SSE body until [DONE].
func (a *streamAssembler) read(body io.Reader) error {
	sse := modelhttp.NewSSEReader(modelhttp.LimitStream(body))
	for {
		ev, err := sse.Next()
		if err != nil {
			if errors.Is(err, io.EOF) && a.finishReason != "" {
				// A server that omits [DONE] after the finish reason
				// (and usage) has still sent the whole answer.
				return nil
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errStreamEnded
			}
			return err
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			return nil
		}
		if data == "" {
			continue
		}
		var c chatChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return errBadChunk
		}
		if c.Error != nil || ev.Name == "error" {
			msg := "the stream reported an error"
			if c.Error != nil && c.Error.Message != "" {
				msg = c.Error.Message
			}
			return errors.New(msg)
		}
		a.chunk(c)
	}
}

func (a *streamAssembler) chunk(c chatChunk) {
	if a.model == "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // one choice is asked for
		}
		if s := ch.Delta.Content; s != nil {
			a.hasContent = true
			if *s != "" {
				a.content.WriteString(*s)
				a.emit(bindings.Delta{Text: *s})
			}
		}
		if s := ch.Delta.Refusal; s != nil {
			a.hasRefusal = true
			if *s != "" {
				a.refusal.WriteString(*s)
				a.emit(bindings.Delta{Text: *s})
			}
		}
		for _, td := range ch.Delta.ToolCalls {
			a.toolCall(td)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finishReason = *ch.FinishReason
		}
	}
}

// toolCall folds one tool-call delta: the first delta of an index brings
// the id and name, later ones pieces of the arguments. A delta with a new
// id at an index already holding a call starts another call (servers that
// send every call whole at index 0).
func (a *streamAssembler) toolCall(td toolCallDelta) {
	if a.byIndex == nil {
		a.byIndex = make(map[int]*callBuilder)
	}
	cb := a.byIndex[td.Index]
	if cb == nil || (td.ID != "" && cb.id != "" && td.ID != cb.id) {
		cb = &callBuilder{pos: len(a.calls)}
		a.calls = append(a.calls, cb)
		a.byIndex[td.Index] = cb
	}
	cb.id += td.ID
	cb.name += td.Function.Name
	cb.args.WriteString(td.Function.Arguments)
	d := bindings.Delta{ToolCallIndex: cb.pos, ArgumentsDelta: td.Function.Arguments}
	if !cb.introduced {
		cb.introduced = true
		d.ToolCallID, d.ToolName = cb.id, a.names.Decode(cb.name)
	}
	if d.ToolCallID != "" || d.ToolName != "" || d.ArgumentsDelta != "" {
		a.emit(d)
	}
}

// choice is the assembled answer in the shape of a non-streamed choice.
func (a *streamAssembler) choice() choice {
	c := choice{FinishReason: a.finishReason}
	if a.hasContent {
		s := a.content.String()
		c.Message.Content = &s
	}
	if a.hasRefusal {
		s := a.refusal.String()
		c.Message.Refusal = &s
	}
	for _, cb := range a.calls {
		c.Message.ToolCalls = append(c.Message.ToolCalls, functionCall(cb.id, cb.name, cb.args.String()))
	}
	return c
}
