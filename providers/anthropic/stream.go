package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/kindgi/agents/bindings"
	"github.com/kindgi/agents/internal/modelhttp"
)

// GenerateStream sends the request with "stream": true, calls onDelta for
// every text_delta and input_json_delta as its event arrives (and once per
// tool_use block when it starts, with the call's id and tool id), and
// returns the assembled response: what Generate returns for the same
// answer.
//
// The events are message_start, content_block_start, content_block_delta,
// content_block_stop, message_delta (the stop reason and the final usage),
// message_stop (the end), ping (ignored) and error; events of other types
// (and deltas of other block types, such as thinking) are ignored, as the
// API's versioning policy asks. An error event, or a stream that ends
// before message_stop, fails with *agents.ModelInvocationError; such a
// failure, like a 429, 5xx or 529 answer, is retried only while nothing
// has been delivered to onDelta. Cancelling ctx closes the connection at
// once.
func (p *Provider) GenerateStream(ctx context.Context, req bindings.GenerateRequest, onDelta func(bindings.Delta)) (bindings.GenerateResponse, error) {
	enc := newEncoder(req.Tools)
	return p.c.GenerateStream(ctx, req, p.encodeRequest(req, enc, true), onDelta,
		func(resp *http.Response) (bindings.GenerateResponse, error) {
			return p.readResponse(ctx, req, enc, resp)
		},
		func(body io.Reader, emit func(bindings.Delta)) (func() (bindings.GenerateResponse, error), error) {
			a := &streamAssembler{enc: enc, emit: emit}
			if err := a.read(body); err != nil {
				return nil, err
			}
			return func() (bindings.GenerateResponse, error) { return p.assemble(req, enc, a.message()) }, nil
		})
}

// streamEvent is the data of one stream event (its fields by type).
type streamEvent struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *contentBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// streamError is an error event.
type streamError struct{ typ, msg string }

func (e *streamError) Error() string { return e.msg }

// HTTPStatus is the status the failure is reported with: an
// overloaded_error is the API's 529, any other error none.
func (e *streamError) HTTPStatus() int {
	if e.typ == "overloaded_error" {
		return 529
	}
	return 0
}

var (
	errStreamEnded = errors.New("the stream ended before message_stop")
	errBadEvent    = errors.New("the stream sent an event that is not JSON")
)

// streamAssembler folds the events of one streamed message.
type streamAssembler struct {
	enc  encoder
	emit func(bindings.Delta)

	msg    message
	blocks map[int]*blockBuilder
	calls  int
}

type blockBuilder struct {
	block   contentBlock
	text    strings.Builder
	input   strings.Builder
	callPos int
}

func (a *streamAssembler) read(body io.Reader) error {
	sse := modelhttp.NewSSEReader(modelhttp.LimitStream(body))
	for {
		ev, err := sse.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return errStreamEnded
			}
			return err
		}
		var e streamEvent
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return errBadEvent
		}
		if e.Type == "" {
			e.Type = ev.Name
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				a.msg = *e.Message
				a.msg.Content = nil
			}
		case "content_block_start":
			a.start(e)
		case "content_block_delta":
			a.delta(e)
		case "message_delta":
			if e.Delta != nil && e.Delta.StopReason != "" {
				a.msg.StopReason = e.Delta.StopReason
			}
			if u := e.Usage; u != nil {
				// The usage of message_delta is cumulative.
				a.msg.Usage.OutputTokens = u.OutputTokens
				if u.InputTokens > 0 {
					a.msg.Usage.InputTokens = u.InputTokens
				}
				if u.CacheCreationInputTokens > 0 {
					a.msg.Usage.CacheCreationInputTokens = u.CacheCreationInputTokens
				}
				if u.CacheReadInputTokens > 0 {
					a.msg.Usage.CacheReadInputTokens = u.CacheReadInputTokens
				}
			}
		case "message_stop":
			return nil
		case "error":
			se := &streamError{msg: "the stream reported an error"}
			if e.Error != nil {
				se.typ = e.Error.Type
				if e.Error.Message != "" {
					se.msg = e.Error.Message
				}
			}
			return se
		}
	}
}

func (a *streamAssembler) start(e streamEvent) {
	if e.ContentBlock == nil {
		return
	}
	if a.blocks == nil {
		a.blocks = make(map[int]*blockBuilder)
	}
	b := &blockBuilder{block: *e.ContentBlock}
	a.blocks[e.Index] = b
	switch b.block.Type {
	case "text":
		if b.block.Text != "" {
			b.text.WriteString(b.block.Text)
			a.emit(bindings.Delta{Text: b.block.Text})
		}
	case "tool_use":
		b.callPos = a.calls
		a.calls++
		a.emit(bindings.Delta{ToolCallIndex: b.callPos, ToolCallID: b.block.ID, ToolName: a.enc.names.Decode(b.block.Name)})
	}
}

func (a *streamAssembler) delta(e streamEvent) {
	b := a.blocks[e.Index]
	if b == nil || e.Delta == nil {
		return
	}
	switch e.Delta.Type {
	case "text_delta":
		if b.block.Type == "text" && e.Delta.Text != "" {
			b.text.WriteString(e.Delta.Text)
			a.emit(bindings.Delta{Text: e.Delta.Text})
		}
	case "input_json_delta":
		if b.block.Type == "tool_use" && e.Delta.PartialJSON != "" {
			b.input.WriteString(e.Delta.PartialJSON)
			a.emit(bindings.Delta{ToolCallIndex: b.callPos, ArgumentsDelta: e.Delta.PartialJSON})
		}
	}
}

// message is the assembled message, its blocks in index order.
func (a *streamAssembler) message() message {
	m := a.msg
	idx := make([]int, 0, len(a.blocks))
	for i := range a.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		b := a.blocks[i]
		blk := b.block
		switch blk.Type {
		case "text":
			blk.Text = b.text.String()
		case "tool_use":
			if b.input.Len() > 0 {
				blk.Input = json.RawMessage(b.input.String())
			}
		}
		m.Content = append(m.Content, blk)
	}
	return m
}
