// Command etcd is the upstream etcd server, built at the version Kubernetes itself pins.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
