// Command lab-workload is the one program of the images the lab's kubelet runs. These machines
// reach no container registry, so the lab writes its images itself (internal/sandbox/node.go) from
// this static binary:
//   - as /pause, the Pods' sandbox: it waits for its end and reaps its children, as Kubernetes'
//     pause does;
//   - as any other image the lab's Git names (the guestbook's), it says which image it stands in
//     for, serves HTTP on $PORT (8080 by default: it runs as a user, not root) and writes one line a request and one line every
//     LAB_TICK (10s), so a Pod's logs have something to show.
package main

import (
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

func main() {
	if filepath.Base(os.Args[0]) == "pause" {
		pause()
		return
	}
	serve()
}

func pause() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range signals {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var status syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}

func serve() {
	image := os.Getenv("LAB_IMAGE")
	if image == "" {
		image = "an image the lab cannot pull"
	}
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	tick := 10 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LAB_TICK")); err == nil && d > 0 {
		tick = d
	}
	host, _ := os.Hostname()
	logf := func(format string, args ...any) {
		fmt.Printf("%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), host, fmt.Sprintf(format, args...))
	}
	logf("the lab's stand-in for %s, serving HTTP on :%s", image, port)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		logf("%s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "%s: the lab's stand-in for %s\n", host, image)
	})
	go func() {
		if err := http.ListenAndServe(":"+port, nil); err != nil {
			logf("%v", err)
			os.Exit(1)
		}
	}()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	ticker := time.NewTicker(tick)
	for n := 1; ; n++ {
		select {
		case s := <-signals:
			logf("%v: stopping", s)
			return
		case <-ticker.C:
			logf("alive, tick %d", n)
		}
	}
}
