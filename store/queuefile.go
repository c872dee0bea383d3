package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/loopdev/loop/store/internal/fsys"
)

// The format of queue.json (docs/storage.md, "Queued inputs and request
// ids"): one JSON object and a newline. Its last member, crc32c, is the
// CRC-32C of every byte before `,"crc32c":`, so a file damaged anywhere,
// inside a string too, is refused rather than read as other inputs.

const (
	queueFormat  = "loop-queue"
	queueVersion = 1
	// queueCRCKey introduces the checksum member; a JSON string cannot
	// hold it unescaped, so its last occurrence is the member.
	queueCRCKey = `,"crc32c":`
)

// queueRecord is queue.json.
type queueRecord struct {
	Format    string                  `json:"format"`
	Version   int                     `json:"version"`
	SessionID string                  `json:"sessionId"`
	Queue     []queuedInputRecord     `json:"queue"`
	Requests  []acceptedRequestRecord `json:"requests"`
	CRC       uint32                  `json:"crc32c"`
}

type queuedInputRecord struct {
	ID       string              `json:"id"`
	RunID    string              `json:"runId"`
	Text     string              `json:"text"`
	Images   []queuedImageRecord `json:"images,omitempty"`
	Files    []queuedFileRecord  `json:"files,omitempty"`
	Skills   []string            `json:"skills,omitempty"`
	Steer    bool                `json:"steer,omitempty"`
	QueuedAt int64               `json:"queuedAt"`
}

type queuedImageRecord struct {
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

type queuedFileRecord struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

type acceptedRequestRecord struct {
	ID       string `json:"id"`
	Digest   string `json:"digest"`
	RunID    string `json:"runId"`
	Queued   bool   `json:"queued,omitempty"`
	ForkedID string `json:"forkedId,omitempty"`
}

// encodeQueue writes q by hand, byte for byte as encoding/json writes
// queueRecord without HTML escaping (TestQueueFileMatchesEncodingJSON).
func encodeQueue(sessionID string, q *QueueState) ([]byte, error) {
	var out []byte
	_, err := encodeQueueTo(sessionID, q, nil, func(p []byte) error {
		out = append(out, p...)
		return nil
	})
	return out, err
}

// encodeQueueTo encodes q a piece of at most about 32 KiB at a time into
// sink (lineEnc), so that a queued 50 MB prompt is escaped straight into
// the file, never whole in memory, and checksums the pieces as they go.
// buf is the encoder's buffer (reused between writes); the one it ends
// with is returned for the next.
func encodeQueueTo(sessionID string, q *QueueState, buf []byte, sink func([]byte) error) ([]byte, error) {
	if len(q.Requests) > MaxAcceptedRequests {
		return buf, fmt.Errorf("%w: %d request ids, at most %d", ErrInvalid, len(q.Requests), MaxAcceptedRequests)
	}
	var crc uint32
	e := lineEnc{buf: buf[:0], sink: func(p []byte) error {
		crc = fsys.CRC32C(crc, p)
		return sink(p)
	}}
	e.raw(`{"format":"` + queueFormat + `","version":` + strconv.Itoa(queueVersion) + `,"sessionId":`)
	e.str(sessionID)
	e.raw(`,"queue":[`)
	for i := range q.Items {
		if i > 0 {
			e.raw(",")
		}
		encodeQueued(&e, &q.Items[i])
	}
	e.raw(`],"requests":[`)
	for i, r := range q.Requests {
		if i > 0 {
			e.raw(",")
		}
		e.raw(`{"id":`)
		e.str(r.ID)
		e.raw(`,"digest":`)
		e.str(r.Digest)
		e.raw(`,"runId":`)
		e.str(r.RunID)
		if r.Queued {
			e.raw(`,"queued":true`)
		}
		if r.ForkedID != "" {
			e.raw(`,"forkedId":`)
			e.str(r.ForkedID)
		}
		e.raw("}")
	}
	e.raw("]")
	e.flush()
	if e.err != nil {
		return e.buf, e.err
	}
	end := strconv.AppendUint(append(e.buf[:0], queueCRCKey...), uint64(crc), 10)
	end = append(end, "}\n"...)
	return end, sink(end)
}

func encodeQueued(e *lineEnc, it *QueuedInput) {
	e.raw(`{"id":`)
	e.str(it.ID)
	e.raw(`,"runId":`)
	e.str(it.RunID)
	e.raw(`,"text":`)
	e.str(it.Text)
	if len(it.Images) > 0 {
		e.raw(`,"images":[`)
		for i, im := range it.Images {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"data":`)
			e.str(im.Data)
			e.raw(`,"mimeType":`)
			e.str(im.MimeType)
			e.raw("}")
		}
		e.raw("]")
	}
	if len(it.Files) > 0 {
		e.raw(`,"files":[`)
		for i, f := range it.Files {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"name":`)
			e.str(f.Name)
			e.raw(`,"text":`)
			e.str(f.Text)
			e.raw("}")
		}
		e.raw("]")
	}
	if len(it.Skills) > 0 {
		e.raw(`,"skills":[`)
		for i, sk := range it.Skills {
			if i > 0 {
				e.raw(",")
			}
			e.str(sk)
		}
		e.raw("]")
	}
	if it.Steer {
		e.raw(`,"steer":true`)
	}
	e.raw(`,"queuedAt":`)
	e.buf = strconv.AppendInt(e.buf, it.QueuedAt, 10)
	e.raw("}")
}

// decodeQueue reads queue.json (named path) of session id. It refuses,
// naming the file: a file that is not one whole JSON object (torn), whose
// checksum does not match (corrupt), of another format or version
// (ErrUnsupportedFormat), of another session, or whose inputs and request
// ids break the format (ErrMalformed).
func decodeQueue(data []byte, id, path string) (QueueState, error) {
	var rec queueRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rec); err != nil {
		return QueueState{}, malformed(path, "not a JSON object (torn or corrupt): %v", err)
	}
	if dec.More() {
		return QueueState{}, malformed(path, "data after the JSON object")
	}
	if rec.Format != queueFormat || rec.Version != queueVersion {
		return QueueState{}, fmt.Errorf("%w: %s: format %q version %d, this Loop reads %q version %d", ErrUnsupportedFormat, path, rec.Format, rec.Version, queueFormat, queueVersion)
	}
	cut := bytes.LastIndex(data, []byte(queueCRCKey))
	if cut < 0 {
		return QueueState{}, malformed(path, "no crc32c member")
	}
	if crc := fsys.CRC32C(0, data[:cut]); crc != rec.CRC {
		return QueueState{}, malformed(path, "checksum %08x, the file says %08x", crc, rec.CRC)
	}
	if rec.SessionID != id {
		return QueueState{}, malformed(path, "it belongs to session %q, not %s", rec.SessionID, id)
	}
	if len(rec.Requests) > MaxAcceptedRequests {
		return QueueState{}, malformed(path, "%d request ids, at most %d", len(rec.Requests), MaxAcceptedRequests)
	}
	var q QueueState
	seen := map[string]bool{}
	for i, r := range rec.Queue {
		if r.ID == "" || r.RunID == "" {
			return QueueState{}, malformed(path, "queued input %d has no id or runId", i)
		}
		if seen[r.ID] {
			return QueueState{}, malformed(path, "queued input %q appears twice", r.ID)
		}
		seen[r.ID] = true
		it := QueuedInput{ID: r.ID, RunID: r.RunID, Text: r.Text, Skills: r.Skills, Steer: r.Steer, QueuedAt: r.QueuedAt}
		for _, im := range r.Images {
			it.Images = append(it.Images, QueuedImage(im))
		}
		for _, f := range r.Files {
			it.Files = append(it.Files, QueuedFile(f))
		}
		q.Items = append(q.Items, it)
	}
	clear(seen)
	for i, r := range rec.Requests {
		if r.ID == "" || r.RunID == "" || !isDigest(r.Digest) {
			return QueueState{}, malformed(path, "request %d needs an id, a runId and a 64-digit hex digest", i)
		}
		if seen[r.ID] {
			return QueueState{}, malformed(path, "request id %q appears twice", r.ID)
		}
		seen[r.ID] = true
		q.Requests = append(q.Requests, AcceptedRequest(r))
	}
	return q, nil
}

// isDigest: a lower-case hex SHA-256.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
