// Command pod-loopback stands in, in the lab, for the network of cluster-proxy's agent pod, which
// the lab (no pods) does not have. In that pod, cluster-proxy's user server reaches the cluster's
// apiserver at cluster-<hash>.open-cluster-management.proxy:7443: a hostAlias points that name at
// the pod's loopback, where the service-proxy container serves, with a certificate of
// cluster-proxy's signer, and hands a bearer token the cluster accepts on to the apiserver
// unchanged. In the lab, each cluster's konnectivity agent resolves that name to a loopback address
// of its own (a hosts file in its mount namespace), this program forwards that address's port 7443
// to the cluster's apiserver, byte for byte, and the apiserver presents the signer's certificate
// for *.open-cluster-management.proxy (--tls-sni-cert-key). TLS runs end to end, from the user
// server to the apiserver; nothing here reads or changes a request.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
)

func main() {
	listen := flag.String("listen", "", "the address to serve, e.g. 127.0.0.2:7443")
	to := flag.String("to", "", "the address to forward each connection to: the cluster's apiserver, e.g. 127.0.0.1:6443")
	flag.Parse()
	if *listen == "" || *to == "" {
		fmt.Fprintln(os.Stderr, "pod-loopback: --listen and --to are required")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pod-loopback:", err)
		os.Exit(1)
	}
	fmt.Printf("forwarding %s to %s\n", l.Addr(), *to)
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			fmt.Fprintln(os.Stderr, "pod-loopback: accepting:", err)
			continue
		}
		go forward(c, *to)
	}
}

// forward copies bytes both ways between c and a new connection to addr, until both sides are done.
func forward(c net.Conn, addr string) {
	defer func() { _ = c.Close() }()
	up, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-loopback: dialing %s: %v\n", addr, err)
		return
	}
	defer func() { _ = up.Close() }()
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}
	go half(up, c)
	go half(c, up)
	wg.Wait()
}
