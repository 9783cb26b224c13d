module github.com/go-schedule/schedule/mqtt

go 1.25

replace github.com/go-schedule/schedule => ../

require (
	github.com/go-schedule/schedule v0.1.0
	github.com/mochi-mqtt/server/v2 v2.7.9
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/rs/xid v1.4.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.17.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
