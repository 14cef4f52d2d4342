// Command droprun-cni is the pod network of droprun's offline kind node
// image, a small stand-in for kindnetd (which the Go module proxy does not
// serve). It runs as a DaemonSet with the host network on every node and:
//
//   - writes a ptp + host-local CNI configuration for its node's podCIDR,
//   - routes every other node's pod CIDR via that node's InternalIP,
//   - masquerades pod traffic that leaves the cluster's pod range,
//   - drops traffic to pod IPs that no pod holds (a blackhole route for the
//     cluster's pod range, under the per-pod and per-node routes), as a
//     real pod network does: without it, a connection to a deleted pod's
//     IP would leave through the node's default route, and on a host whose
//     network answers any address (a sandbox's egress proxy) come back as
//     an HTTP answer instead of the timeout it is.
//
// It talks to the API server with the standard library only (the service
// account token and CA), polling the node list, so it builds in seconds.
//
// Environment: NODE_NAME (required), POD_SUBNET (the cluster's pod CIDR,
// required), CONTROL_PLANE_ENDPOINT (host:port of the API server, set by
// kind; default: KUBERNETES_SERVICE_HOST/PORT), HOST_IP (the node's address,
// for the MTU), CNI_CONF_DIR (default /etc/cni/net.d).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	saDir        = "/var/run/secrets/kubernetes.io/serviceaccount"
	confFileName = "10-droprun.conflist"
	masqChain    = "DROPRUN-MASQ"
	ruleComment  = "droprun-cni: masquerade pod traffic leaving the pod range"
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetPrefix("droprun-cni ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

// config is the daemon's environment.
type config struct {
	nodeName  string
	podSubnet *net.IPNet
	apiURL    string
	hostIP    string
	confDir   string
}

func configFromEnv(getenv func(string) string) (config, error) {
	c := config{
		nodeName: getenv("NODE_NAME"),
		hostIP:   getenv("HOST_IP"),
		confDir:  getenv("CNI_CONF_DIR"),
	}
	if c.nodeName == "" {
		return c, errors.New("NODE_NAME is not set")
	}
	if c.confDir == "" {
		c.confDir = "/etc/cni/net.d"
	}
	_, subnet, err := net.ParseCIDR(strings.TrimSpace(strings.Split(getenv("POD_SUBNET"), ",")[0]))
	if err != nil {
		return c, fmt.Errorf("POD_SUBNET %q: %w", getenv("POD_SUBNET"), err)
	}
	c.podSubnet = subnet
	switch ep := getenv("CONTROL_PLANE_ENDPOINT"); {
	case ep != "":
		c.apiURL = "https://" + ep
	case getenv("KUBERNETES_SERVICE_HOST") != "":
		c.apiURL = "https://" + net.JoinHostPort(getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT"))
	default:
		return c, errors.New("neither CONTROL_PLANE_ENDPOINT nor KUBERNETES_SERVICE_HOST is set")
	}
	return c, nil
}

func run(ctx context.Context) error {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	api, err := newAPIClient(cfg.apiURL, saDir)
	if err != nil {
		return err
	}
	log.Printf("node %s, pod subnet %s, API server %s", cfg.nodeName, cfg.podSubnet, cfg.apiURL)
	d := &daemon{cfg: cfg, api: api, routes: map[string]string{}, mtu: mtuOf(cfg.hostIP)}
	interval := 2 * time.Second
	for {
		if err := d.reconcile(ctx); err != nil {
			log.Printf("reconcile: %v", err)
		} else if d.confWritten {
			interval = 10 * time.Second
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// daemon holds what it has done so far.
type daemon struct {
	cfg         config
	api         *apiClient
	mtu         int
	confWritten bool
	masqDone    time.Time
	routes      map[string]string // pod CIDR => gateway it was routed via
}

func (d *daemon) reconcile(ctx context.Context) error {
	body, err := d.api.get(ctx, "/api/v1/nodes")
	if err != nil {
		return err
	}
	nodes, err := parseNodeList(body)
	if err != nil {
		return err
	}
	var self *node
	for i := range nodes {
		if nodes[i].Name == d.cfg.nodeName {
			self = &nodes[i]
		}
	}
	if self == nil {
		return fmt.Errorf("node %s is not in the node list", d.cfg.nodeName)
	}
	cidr := firstIPv4(self.PodCIDRs)
	if cidr == "" {
		return fmt.Errorf("node %s has no IPv4 podCIDR yet", d.cfg.nodeName)
	}
	conf, err := renderConflist(cidr, d.mtu)
	if err != nil {
		return err
	}
	changed, err := writeIfChanged(filepath.Join(d.cfg.confDir, confFileName), conf)
	if err != nil {
		return err
	}
	if changed {
		log.Printf("wrote %s for pod CIDR %s", confFileName, cidr)
	}
	d.confWritten = true

	want := desiredRoutes(nodes, d.cfg.nodeName)
	for dst, gw := range want {
		if d.routes[dst] == gw {
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "route", "replace", dst, "via", gw).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route replace %s via %s: %v: %s", dst, gw, err, out)
		}
		log.Printf("route %s via %s", dst, gw)
		d.routes[dst] = gw
	}
	for dst := range d.routes {
		if _, ok := want[dst]; ok {
			continue
		}
		if out, err := exec.CommandContext(ctx, "ip", "route", "del", dst).CombinedOutput(); err != nil {
			log.Printf("ip route del %s: %v: %s", dst, err, out)
		}
		delete(d.routes, dst)
		log.Printf("route %s removed", dst)
	}

	// The masquerade rules and the blackhole are idempotent; refresh them
	// now and then in case something flushed them.
	if time.Since(d.masqDone) > time.Minute {
		if err := ensureMasquerade(ctx, d.cfg.podSubnet.String()); err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, "ip", "route", "replace", "blackhole", d.cfg.podSubnet.String()).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route replace blackhole %s: %v: %s", d.cfg.podSubnet, err, out)
		}
		d.masqDone = time.Now()
	}
	return nil
}

// ensureMasquerade installs the DROPRUN-MASQ chain (atomically, with
// iptables-restore --noflush) and the jump to it from POSTROUTING.
func ensureMasquerade(ctx context.Context, podSubnet string) error {
	restore := exec.CommandContext(ctx, "iptables-restore", "--noflush", "--wait")
	restore.Stdin = strings.NewReader(masqRules(podSubnet))
	if out, err := restore.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %v: %s", err, out)
	}
	jump := masqJump(podSubnet)
	check := exec.CommandContext(ctx, "iptables", append([]string{"--wait", "-t", "nat", "-C", "POSTROUTING"}, jump...)...)
	if check.Run() == nil {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "iptables", append([]string{"--wait", "-t", "nat", "-A", "POSTROUTING"}, jump...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -A POSTROUTING: %v: %s", err, out)
	}
	log.Printf("masquerading traffic from %s to outside it", podSubnet)
	return nil
}

// masqRules is the iptables-restore input of the DROPRUN-MASQ chain: pod to
// pod traffic keeps its source address, the rest is masqueraded.
func masqRules(podSubnet string) string {
	return fmt.Sprintf(`*nat
:%[1]s - [0:0]
-A %[1]s -d %[2]s -m comment --comment "droprun-cni: pod to pod" -j RETURN
-A %[1]s -m comment --comment "droprun-cni: leaving the pod range" -j MASQUERADE
COMMIT
`, masqChain, podSubnet)
}

// masqJump is the POSTROUTING rule that sends pod traffic to DROPRUN-MASQ.
func masqJump(podSubnet string) []string {
	return []string{"-s", podSubnet, "-m", "comment", "--comment", ruleComment, "-j", masqChain}
}

// renderConflist renders the node's CNI configuration: ptp veths with
// host-local addresses from the node's pod CIDR, plus portmap for hostPort.
func renderConflist(podCIDR string, mtu int) ([]byte, error) {
	if _, _, err := net.ParseCIDR(podCIDR); err != nil {
		return nil, fmt.Errorf("pod CIDR %q: %w", podCIDR, err)
	}
	if mtu <= 0 {
		mtu = 1500
	}
	return []byte(fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "droprun",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "mtu": %d,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [{"dst": "0.0.0.0/0"}],
        "ranges": [[{"subnet": %q}]]
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
`, mtu, podCIDR)), nil
}

// writeIfChanged writes data to path atomically unless it already holds it.
func writeIfChanged(path string, data []byte) (bool, error) {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// desiredRoutes maps every other node's IPv4 pod CIDR to its InternalIP.
func desiredRoutes(nodes []node, self string) map[string]string {
	routes := map[string]string{}
	for _, n := range nodes {
		if n.Name == self {
			continue
		}
		cidr, ip := firstIPv4(n.PodCIDRs), n.internalIPv4()
		if cidr == "" || ip == "" {
			continue
		}
		routes[cidr] = ip
	}
	return routes
}

func firstIPv4(cidrs []string) string {
	for _, c := range cidrs {
		if ip, _, err := net.ParseCIDR(c); err == nil && ip.To4() != nil {
			return c
		}
	}
	return ""
}

// mtuOf returns the MTU of the interface holding ip, or 1500.
func mtuOf(ip string) int {
	ifaces, err := net.Interfaces()
	if err != nil {
		return 1500
	}
	for _, ifc := range ifaces {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
				return ifc.MTU
			}
		}
	}
	return 1500
}

// apiClient reads from the API server with the pod's service account.
type apiClient struct {
	base      string
	tokenPath string
	http      *http.Client
}

func newAPIClient(base, dir string) (*apiClient, error) {
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return nil, fmt.Errorf("service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("service account CA: no certificates")
	}
	return &apiClient{
		base:      strings.TrimSuffix(base, "/"),
		tokenPath: filepath.Join(dir, "token"),
		http: &http.Client{
			Timeout:   15 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		},
	}, nil
}

func (a *apiClient) get(ctx context.Context, path string) ([]byte, error) {
	// The token is rotated on disk: read it for every request.
	token, err := os.ReadFile(a.tokenPath)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Accept", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
