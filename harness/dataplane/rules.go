package dataplane

import (
	"bufio"
	"crypto/sha256"
	"encoding/base32"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Tables the watcher models: iptables-nft's nat table (kube-proxy's
// iptables mode) and kube-proxy's own table (its nftables mode).
var tables = []string{"ip nat", "ip kube-proxy"}

// Service names the Service whose routes are watched.
type Service struct {
	Namespace, Name string
	// Ports are the Service's port names ("" for an unnamed port): the
	// iptables chains are named by a hash of namespace/name:port.
	Ports []string
}

// iptablesChains returns the KUBE-SVC chain names kube-proxy's iptables
// mode gives the Service's TCP ports (k8s.io/kubernetes pkg/proxy/iptables
// servicePortPolicyClusterChain).
func (s Service) iptablesChains() []string {
	var out []string
	for _, p := range s.Ports {
		name := s.Namespace + "/" + s.Name
		if p != "" {
			name += ":" + p
		}
		sum := sha256.Sum256([]byte(name + "tcp"))
		out = append(out, "KUBE-SVC-"+base32.StdEncoding.EncodeToString(sum[:])[:16])
	}
	return out
}

// isNftablesChain reports whether chain is one of the Service's chains in
// kube-proxy's nftables mode: service-HASH-namespace/name/tcp/port, HASH
// being 8 characters (k8s.io/kubernetes pkg/proxy/nftables
// servicePortChainNameBase).
func (s Service) isNftablesChain(chain string) bool {
	rest, ok := strings.CutPrefix(chain, "service-")
	if !ok || len(rest) < 9 || rest[8] != '-' {
		return false
	}
	port, ok := strings.CutPrefix(rest[9:], s.Namespace+"/"+s.Name+"/tcp/")
	return ok && (len(s.Ports) == 0 || slices.Contains(s.Ports, port))
}

// ruleset is one node's rules in the modelled tables: chain → handle →
// rule text, by table.
type ruleset map[string]map[string]map[int]string

func (r ruleset) chain(table, name string) map[int]string {
	if r[table] == nil {
		r[table] = map[string]map[int]string{}
	}
	c := r[table][name]
	if c == nil {
		c = map[int]string{}
		r[table][name] = c
	}
	return c
}

var (
	handleSuffix = regexp.MustCompile(`\s*# handle (\d+)\s*$`)
	ipv4         = `(\d{1,3}(?:\.\d{1,3}){3})`
	// Where a rule names the pod it sends to: "dnat to IP:PORT", a numgen
	// map's "IP . PORT" elements, an endpoint chain "…__IP/PORT".
	dnatTo     = regexp.MustCompile(`dnat (?:ip )?to ` + ipv4 + `:\d+`)
	mapElement = regexp.MustCompile(`: ` + ipv4 + ` \. \d+`)
	endpointOf = regexp.MustCompile(`__` + ipv4 + `/\d+`)
	jumpSEP    = regexp.MustCompile(`(?:jump|goto) (KUBE-SEP-[A-Z0-9]+)`)
)

// readList fills r from the output of `nft -a list table T`: every
// chain's rules by handle. Sets and maps are skipped.
func (r ruleset) readList(table string, out io.Reader) error {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var chain string // the chain being read, "" outside chains
	depth := 0       // braces open inside a set or map being skipped
	var pending strings.Builder
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case depth > 0:
			depth += strings.Count(line, "{") - strings.Count(line, "}")
		case chain == "" && strings.HasPrefix(line, "chain "):
			chain = strings.Fields(line)[1]
			r.chain(table, chain)
			pending.Reset()
		case chain == "" && (strings.HasPrefix(line, "set ") || strings.HasPrefix(line, "map ") || strings.HasPrefix(line, "flowtable ")):
			depth = strings.Count(line, "{") - strings.Count(line, "}")
		case chain != "" && line == "}":
			chain = ""
		case chain != "" && pending.Len() == 0 && !handleSuffix.MatchString(line) &&
			(strings.HasPrefix(line, "type ") || strings.HasPrefix(line, "comment ") || strings.HasPrefix(line, "policy ")):
			// A base chain's hook line or a chain comment: not a rule.
		case chain != "":
			// A long rule may wrap; it ends with its handle.
			pending.WriteString(line + " ")
			if m := handleSuffix.FindStringSubmatch(line); m != nil {
				h, _ := strconv.Atoi(m[1])
				r.chain(table, chain)[h] = handleSuffix.ReplaceAllString(strings.TrimSpace(pending.String()), "")
				pending.Reset()
			}
		}
	}
	return sc.Err()
}

// apply applies one line of `nft -a monitor` to r and reports whether the
// line ends a transaction ("# new generation N by process …").
func (r ruleset) apply(line string) (commit bool) {
	if i := strings.Index(line, "# Warning"); i >= 0 { // iptables-nft's notice, appended to some lines
		line = line[:i]
	}
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "# new generation") {
		return true
	}
	f := strings.Fields(line)
	if len(f) < 4 {
		return false
	}
	verb, what, table := f[0], f[1], f[2]+" "+f[3]
	if !slices.Contains(tables, table) {
		return false
	}
	switch {
	case what == "table" && verb == "delete", what == "table" && verb == "flush":
		delete(r, table)
	case what == "chain" && len(f) >= 5:
		switch verb {
		case "delete":
			delete(r[table], f[4])
		case "flush":
			clear(r.chain(table, f[4]))
		case "add":
			r.chain(table, f[4])
		}
	case what == "rule" && len(f) >= 5:
		chain := f[4]
		switch verb {
		case "add", "insert", "replace":
			m := handleSuffix.FindStringSubmatch(line)
			if m == nil {
				return false // no handle: `nft monitor` without -a
			}
			h, _ := strconv.Atoi(m[1])
			text := handleSuffix.ReplaceAllString(strings.Join(f[5:], " "), "")
			r.chain(table, chain)[h] = text
		case "delete":
			if len(f) >= 7 && f[5] == "handle" {
				if h, err := strconv.Atoi(f[6]); err == nil {
					delete(r[table][chain], h)
				}
			}
		}
	}
	return false
}

// routed returns the pod IPs the Service's chains lead to, sorted.
func (r ruleset) routed(s Service) []string {
	ips := map[string]bool{}
	add := func(re *regexp.Regexp, text string) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			ips[m[1]] = true
		}
	}
	// iptables mode: KUBE-SVC → KUBE-SEP → dnat.
	for _, svc := range s.iptablesChains() {
		for _, rule := range r["ip nat"][svc] {
			for _, m := range jumpSEP.FindAllStringSubmatch(rule, -1) {
				for _, sep := range r["ip nat"][m[1]] {
					add(dnatTo, sep)
				}
			}
		}
	}
	// nftables mode: the service chain names its endpoints itself.
	for chain, rules := range r["ip kube-proxy"] {
		if !s.isNftablesChain(chain) {
			continue
		}
		for _, rule := range rules {
			add(dnatTo, rule)
			add(mapElement, rule)
			add(endpointOf, rule)
		}
	}
	out := make([]string, 0, len(ips))
	for ip := range ips {
		out = append(out, ip)
	}
	slices.Sort(out)
	return out
}

// diff returns the IPs in now but not in before (added) and the reverse
// (removed); both inputs sorted.
func diff(before, now []string) (added, removed []string) {
	for _, ip := range now {
		if _, found := slices.BinarySearch(before, ip); !found {
			added = append(added, ip)
		}
	}
	for _, ip := range before {
		if _, found := slices.BinarySearch(now, ip); !found {
			removed = append(removed, ip)
		}
	}
	return added, removed
}
