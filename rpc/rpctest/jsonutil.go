package rpctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// decode parses JSON keeping numbers exact.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// encode writes v with sorted keys and without HTML escaping, indented when
// indent is true, and without a trailing newline.
func encode(v any, indent bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<unencodable: %v>", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// pretty re-encodes raw JSON sorted and indented; absent becomes null.
func pretty(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	v, err := decode(raw)
	if err != nil {
		return string(raw)
	}
	return encode(v, true)
}

// lookup follows a dotted path ("sessions.0.id") into a decoded value.
// The empty path is the value itself.
func lookup(v any, path string) (any, bool) {
	if path == "" || path == "." {
		return v, true
	}
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// text is how a looked-up value is stored in a variable or compared with a
// filter: strings bare, everything else as compact JSON.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return encode(v, false)
}

// filter is one key=value or key~regexp condition on a message's params.
type filter struct {
	path  string
	value string
	re    *regexp.Regexp
}

func parseFilters(args []string) ([]filter, error) {
	var fs []filter
	for _, a := range args {
		i := strings.IndexAny(a, "=~")
		if i <= 0 {
			return nil, fmt.Errorf("filter %q: want path=value or path~regexp", a)
		}
		f := filter{path: a[:i], value: a[i+1:]}
		if a[i] == '~' {
			re, err := regexp.Compile(f.value)
			if err != nil {
				return nil, fmt.Errorf("filter %q: %w", a, err)
			}
			f.re = re
		}
		fs = append(fs, f)
	}
	return fs, nil
}

func matches(v any, fs []filter) bool {
	for _, f := range fs {
		x, ok := lookup(v, f.path)
		if !ok {
			return false
		}
		if f.re != nil && !f.re.MatchString(text(x)) || f.re == nil && text(x) != f.value {
			return false
		}
	}
	return true
}

func (f filter) String() string {
	if f.re != nil {
		return f.path + "~" + f.value
	}
	return f.path + "=" + f.value
}

// unescape turns \r, \n, \t, \\ and \xHH (one byte, for input that is not
// UTF-8) into the bytes they name and leaves any other backslash alone, so
// JSON escapes such as \" and \u00e9 pass through.
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case 'r':
			b.WriteByte('\r')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		case 'x':
			n, err := strconv.ParseUint(s[i+2:min(i+4, len(s))], 16, 8)
			if err != nil || i+4 > len(s) {
				b.WriteByte('\\')
				continue
			}
			b.WriteByte(byte(n))
			i += 2
		default:
			b.WriteByte('\\')
			continue
		}
		i++
	}
	return b.String()
}
