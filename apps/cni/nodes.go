package main

import (
	"encoding/json"
	"fmt"
	"net"
)

// node is the part of a Kubernetes Node the daemon reads.
type node struct {
	Name      string
	PodCIDRs  []string
	Addresses []nodeAddress
}

type nodeAddress struct {
	Type    string `json:"type"`
	Address string `json:"address"`
}

// internalIPv4 returns the node's first IPv4 InternalIP.
func (n node) internalIPv4() string {
	for _, a := range n.Addresses {
		if a.Type != "InternalIP" {
			continue
		}
		if ip := net.ParseIP(a.Address); ip != nil && ip.To4() != nil {
			return a.Address
		}
	}
	return ""
}

// parseNodeList decodes a v1 NodeList.
func parseNodeList(body []byte) ([]node, error) {
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				PodCIDR  string   `json:"podCIDR"`
				PodCIDRs []string `json:"podCIDRs"`
			} `json:"spec"`
			Status struct {
				Addresses []nodeAddress `json:"addresses"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decode node list: %w", err)
	}
	if list.Kind != "NodeList" {
		return nil, fmt.Errorf("decode node list: got kind %q", list.Kind)
	}
	nodes := make([]node, 0, len(list.Items))
	for _, it := range list.Items {
		cidrs := it.Spec.PodCIDRs
		if len(cidrs) == 0 && it.Spec.PodCIDR != "" {
			cidrs = []string{it.Spec.PodCIDR}
		}
		nodes = append(nodes, node{Name: it.Metadata.Name, PodCIDRs: cidrs, Addresses: it.Status.Addresses})
	}
	return nodes, nil
}
