module github.com/go-schedule/schedule/gnetidle/cmd/idleload

go 1.25

// idleload is run from a clone and never published: it builds against the
// tree around it.
replace (
	github.com/go-schedule/schedule => ../../..
	github.com/go-schedule/schedule/bench => ../../../bench
	github.com/go-schedule/schedule/gnetidle => ../..
)

require (
	github.com/go-schedule/schedule v0.1.0
	github.com/go-schedule/schedule/bench v0.1.0
	github.com/go-schedule/schedule/gnetidle v0.1.0
	github.com/panjf2000/gnet/v2 v2.9.7
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.19.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
