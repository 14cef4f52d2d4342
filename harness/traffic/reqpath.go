package traffic

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckPath says what is wrong with p as the path every request asks
// for (traffic.path), or nil: it must start with / and hold nothing but a
// URL path's own characters (RFC 3986: letters, digits, -._~!$&'()*+;=:@/
// and %XX escapes). A comma, a space, a control character, a query or a
// fragment is refused, so a path can never carry a second target, a
// header or a flag to wherever the load is sent from.
func CheckPath(p string) error {
	if p == "" || p[0] != '/' {
		return fmt.Errorf("%q does not start with /", p)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~!$&'()*+;=:@/", c) >= 0:
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			i += 2
		case c == '%':
			return fmt.Errorf("%q has a %% that is not an escape %%XX", p)
		default:
			r, _ := utf8.DecodeRuneInString(p[i:])
			return fmt.Errorf("%q holds %q, which is not part of a URL path (no commas, spaces, queries or fragments; escape other characters as %%XX)", p, r)
		}
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
