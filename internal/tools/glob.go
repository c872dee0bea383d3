package tools

import (
	"fmt"
	"path"
	"strings"
)

// globMatcher matches slash-separated relative paths against a glob:
// path.Match syntax per segment, "**" as a whole segment for any number of
// segments (zero included), and {a,b} alternatives. A pattern without "/"
// matches the base name at any depth, as "**/pattern" would.
type globMatcher struct {
	alts [][]string // each alternative, split into segments
}

// maxGlobAlternatives bounds brace expansion.
const maxGlobAlternatives = 256

func compileGlob(pattern string) (*globMatcher, error) {
	if pattern == "" {
		return nil, fmt.Errorf("the glob is empty")
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	m := &globMatcher{}
	for _, p := range expanded {
		p = strings.TrimPrefix(p, "./")
		if !strings.Contains(p, "/") {
			p = "**/" + p
		}
		p = strings.TrimPrefix(p, "/")
		segs := strings.Split(p, "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("bad glob segment %q: %v", s, err)
			}
		}
		m.alts = append(m.alts, segs)
	}
	return m, nil
}

// match reports whether rel (slash-separated, relative) matches.
func (m *globMatcher) match(rel string) bool {
	segs := strings.Split(rel, "/")
	for _, alt := range m.alts {
		if matchSegments(alt, segs) {
			return true
		}
	}
	return false
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for len(rest) > 0 && rest[0] == "**" {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				return true
			}
			for i := 0; i < len(segs); i++ {
				if matchSegments(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// expandBraces turns "a{b,c}d" into "abd", "acd", nesting allowed.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			var parts []string
			start, d := open+1, 0
			for j := open + 1; j < i; j++ {
				switch p[j] {
				case '\\':
					j++
				case '{':
					d++
				case '}':
					d--
				case ',':
					if d == 0 {
						parts = append(parts, p[start:j])
						start = j + 1
					}
				}
			}
			parts = append(parts, p[start:i])
			var out []string
			for _, part := range parts {
				more, err := expandBraces(p[:open] + part + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, more...)
				if len(out) > maxGlobAlternatives {
					return nil, fmt.Errorf("the glob expands to more than %d alternatives", maxGlobAlternatives)
				}
			}
			return out, nil
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("unclosed { in glob %q", p)
	}
	return []string{p}, nil
}
