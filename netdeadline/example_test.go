package netdeadline_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/go-schedule/schedule"
	"github.com/go-schedule/schedule/netdeadline"
)

// A net/http server on a wrapped listener: the deadlines that ReadTimeout
// and IdleTimeout set on every connection, before every request, are kept
// on the scheduler. A client that connects and sends nothing is cut off
// after ReadTimeout, as without the wrapper.
func ExampleNewListener() {
	s, err := schedule.New(2)
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	wl, err := netdeadline.NewListener(ln, s)
	if err != nil {
		panic(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintln(w, "hello")
		}),
		ReadTimeout: 100 * time.Millisecond,
		IdleTimeout: time.Minute,
	}
	go srv.Serve(wl)

	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))

	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	_, err = silent.Read(make([]byte, 1)) // the server closes it after ReadTimeout
	fmt.Println("silent client:", err)
	silent.Close()

	// The server first, then the scheduler that serves its connections.
	_ = srv.Shutdown(context.Background())
	http.DefaultClient.CloseIdleConnections()
	_ = s.ShutdownContext(context.Background())
	// Output:
	// hello
	// silent client: EOF
}
