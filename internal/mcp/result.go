package mcp

import (
	"encoding/base64"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/internal/jsonenc"
)

// Result is the outcome of one MCP tool call.
type Result struct {
	// Content holds text and image blocks. Content kinds the model cannot
	// take (audio, binary resources) become a text line describing them.
	Content []convo.Block
	// IsError is the tool's own verdict: the call reached the tool and the
	// tool reported failure. Transport and protocol failures are errors
	// from Call instead.
	IsError bool
}

// Text returns the concatenated text blocks of r.
func (r Result) Text() string {
	var b strings.Builder
	for _, blk := range r.Content {
		if blk.Type == convo.BlockText {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(blk.Text)
		}
	}
	return b.String()
}

func convertResult(res *sdk.CallToolResult) Result {
	out := Result{IsError: res.IsError}
	for _, c := range res.Content {
		if blk, ok := convertContent(c); ok {
			out.Content = append(out.Content, blk)
		}
	}
	// A tool with only structured output still owes the model an answer.
	if len(out.Content) == 0 && res.StructuredContent != nil {
		if data, err := jsonenc.Marshal(res.StructuredContent); err == nil {
			out.Content = append(out.Content, textBlock(string(data)))
		}
	}
	return out
}

func convertContent(c sdk.Content) (convo.Block, bool) {
	switch c := c.(type) {
	case *sdk.TextContent:
		return textBlock(c.Text), true
	case *sdk.ImageContent:
		return imageBlock(c.Data, c.MIMEType), true
	case *sdk.AudioContent:
		return textBlock(fmt.Sprintf("[audio %s, %d bytes, not shown]", c.MIMEType, len(c.Data))), true
	case *sdk.ResourceLink:
		s := "[resource link " + c.URI
		if c.Name != "" {
			s += " (" + c.Name + ")"
		}
		if c.Description != "" {
			s += ": " + c.Description
		}
		return textBlock(s + "]"), true
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return convo.Block{}, false
		}
		switch {
		case r.Text != "":
			return textBlock("[resource " + r.URI + "]\n" + r.Text), true
		case strings.HasPrefix(r.MIMEType, "image/") && len(r.Blob) > 0:
			return imageBlock(r.Blob, r.MIMEType), true
		default:
			return textBlock(fmt.Sprintf("[resource %s %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob))), true
		}
	case nil:
		return convo.Block{}, false
	default:
		data, err := c.MarshalJSON()
		if err != nil {
			return convo.Block{}, false
		}
		return textBlock(string(jsonenc.UnescapeHTML(data))), true
	}
}

func textBlock(s string) convo.Block { return convo.Block{Type: convo.BlockText, Text: s} }

// imageBlock re-encodes: the SDK decodes the wire's base64 into raw bytes.
func imageBlock(data []byte, mime string) convo.Block {
	return convo.Block{Type: convo.BlockImage, Data: base64.StdEncoding.EncodeToString(data), MimeType: mime}
}
