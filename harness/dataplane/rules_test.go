package dataplane

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"
)

var kubeDNS = Service{Namespace: "kube-system", Name: "kube-dns", Ports: []string{"dns-tcp"}}

func TestIptablesChainName(t *testing.T) {
	// As kube-proxy named it on the cluster testdata was captured from.
	if got := kubeDNS.iptablesChains(); !slices.Equal(got, []string{"KUBE-SVC-ERIFXISQEP7F7OF4"}) {
		t.Fatalf("chains = %v", got)
	}
}

func readListFile(t *testing.T, table, path string) ruleset {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := ruleset{}
	if err := r.readList(table, f); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRoutedFromLists(t *testing.T) {
	ipt := readListFile(t, "ip nat", "testdata/iptables-list.txt")
	if got := ipt.routed(kubeDNS); !slices.Equal(got, []string{"10.244.0.5", "10.244.2.3"}) {
		t.Errorf("iptables mode: routed = %v", got)
	}
	nft := readListFile(t, "ip kube-proxy", "testdata/nftables-list.txt")
	if got := nft.routed(kubeDNS); !slices.Equal(got, []string{"10.244.1.2", "10.244.2.2"}) {
		t.Errorf("nftables mode: routed = %v", got)
	}
	// Another Service's chains are not the Service's.
	if got := nft.routed(Service{Namespace: "default", Name: "web", Ports: []string{"http"}}); len(got) != 0 {
		t.Errorf("routes of a Service with no chains: %v", got)
	}
}

// beforeIptables is the nat table's kube-dns chains just before
// testdata/iptables-monitor.txt was captured (both CoreDNS pods deleted).
const beforeIptables = `table ip nat { # handle 2
	chain KUBE-SVC-ERIFXISQEP7F7OF4 { # handle 27
		meta l4proto tcp ip saddr != 10.244.0.0/16 ip daddr 10.96.0.10  tcp dport 53 counter packets 0 bytes 0 jump KUBE-MARK-MASQ # handle 221
		 meta random & 2147483647 < 1073741824 counter packets 0 bytes 0 jump KUBE-SEP-BWHGELGX6BITPZVO # handle 222
		 counter packets 0 bytes 0 jump KUBE-SEP-H7FN6LU3RSH6CC2T # handle 223
	}
	chain KUBE-SEP-BWHGELGX6BITPZVO { # handle 28
		ip saddr 10.244.0.2  counter packets 0 bytes 0 jump KUBE-MARK-MASQ # handle 224
		meta l4proto tcp   counter packets 0 bytes 0 dnat to 10.244.0.2:53 # handle 225
	}
	chain KUBE-SEP-H7FN6LU3RSH6CC2T { # handle 29
		ip saddr 10.244.0.4  counter packets 0 bytes 0 jump KUBE-MARK-MASQ # handle 226
		meta l4proto tcp   counter packets 0 bytes 0 dnat to 10.244.0.4:53 # handle 227
	}
}
`

func TestMonitorReplay(t *testing.T) {
	r := ruleset{}
	if err := r.readList("ip nat", strings.NewReader(beforeIptables)); err != nil {
		t.Fatal(err)
	}
	if got := r.routed(kubeDNS); !slices.Equal(got, []string{"10.244.0.2", "10.244.0.4"}) {
		t.Fatalf("before: routed = %v", got)
	}
	f, err := os.Open("testdata/iptables-monitor.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var history [][]string
	commits := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if r.apply(sc.Text()) {
			commits++
			if now := r.routed(kubeDNS); len(history) == 0 || !slices.Equal(history[len(history)-1], now) {
				history = append(history, now)
			}
		}
	}
	if commits < 5 {
		t.Fatalf("%d transactions seen in the capture, want its 10", commits)
	}
	// Both old pods leave, new ones arrive (the capture holds two rounds of
	// CoreDNS restarts); the end state is what nft listed afterwards.
	want := readListFile(t, "ip nat", "testdata/iptables-list.txt").routed(kubeDNS)
	if got := history[len(history)-1]; !slices.Equal(got, want) {
		t.Errorf("after the capture: routed = %v, nft list says %v (history %v)", got, want, history)
	}
	if len(history) < 3 {
		t.Fatalf("routes changed %d times, want the old pods leaving and new ones arriving: %v", len(history)-1, history)
	}
	for _, h := range history[1:] {
		if slices.Contains(h, "10.244.0.2") || slices.Contains(h, "10.244.0.4") {
			t.Errorf("an old pod still routed after a transaction: %v", history)
		}
	}
}

func TestApplyDeletes(t *testing.T) {
	r := ruleset{}
	r.apply("add rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http meta l4proto tcp dnat to 10.0.0.1:8080 # handle 5")
	svc := Service{Namespace: "ns", Name: "web", Ports: []string{"http"}}
	if got := r.routed(svc); !slices.Equal(got, []string{"10.0.0.1"}) {
		t.Fatalf("routed = %v", got)
	}
	r.apply("delete rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http handle 5")
	if got := r.routed(svc); len(got) != 0 {
		t.Errorf("after delete: routed = %v", got)
	}
	r.apply("add rule ip kube-proxy service-AAAAAAAA-ns/web/tcp/http meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.0.0.2 . 8080, 1 : 10.0.0.3 . 8080 } # handle 9")
	if got := r.routed(svc); !slices.Equal(got, []string{"10.0.0.2", "10.0.0.3"}) {
		t.Errorf("numgen map: routed = %v", got)
	}
	r.apply("delete chain ip kube-proxy service-AAAAAAAA-ns/web/tcp/http")
	if got := r.routed(svc); len(got) != 0 {
		t.Errorf("after delete chain: routed = %v", got)
	}
	if !r.apply("# new generation 12 by process 99 (nft)") {
		t.Error("a new generation line does not end the transaction")
	}
	added, removed := diff([]string{"a", "b"}, []string{"b", "c"})
	if !slices.Equal(added, []string{"c"}) || !slices.Equal(removed, []string{"a"}) {
		t.Errorf("diff = %v, %v", added, removed)
	}
}

func TestNftablesChainName(t *testing.T) {
	svc := Service{Namespace: "default", Name: "web", Ports: []string{"http"}}
	for chain, want := range map[string]bool{
		"service-ULMVA6XW-default/web/tcp/http":               true,
		"service-ULMVA6XW-default/web/tcp/metrics":            false, // another port
		"service-ULMVA6XW-a-default/web/tcp/http":             false, // namespace a-default
		"service-ULMVA6XW-default/web2/tcp/http":              false,
		"endpoint-ULMVA6XW-default/web/tcp/http__10.0.0.1/80": false,
	} {
		if got := svc.isNftablesChain(chain); got != want {
			t.Errorf("isNftablesChain(%q) = %v, want %v", chain, got, want)
		}
	}
}
