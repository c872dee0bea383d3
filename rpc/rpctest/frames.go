package rpctest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// frame encodes one message body for the server's stdin.
func frame(lsp bool, body []byte) []byte {
	if lsp {
		return append([]byte("Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"), body...)
	}
	return append(append([]byte(nil), body...), '\n')
}

// readFrame reads the next frame the server wrote. Blank NDJSON lines and
// headers other than Content-Length are skipped.
func readFrame(br *bufio.Reader, lsp bool) ([]byte, error) {
	if !lsp {
		for {
			line, err := br.ReadBytes('\n')
			if t := bytes.TrimSpace(line); len(t) > 0 {
				return t, nil
			}
			if err != nil {
				return nil, err
			}
		}
	}
	length := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if strings.TrimSpace(line) != "" || length >= 0 {
				return nil, fmt.Errorf("output ended inside a header block: %q", line)
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if length < 0 {
				continue
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("malformed header line %q", line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad Content-Length %q", value)
			}
			length = n
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, fmt.Errorf("reading a %d-byte body: %w", length, err)
	}
	return body, nil
}
