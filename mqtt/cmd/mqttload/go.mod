module github.com/go-schedule/schedule/mqtt/cmd/mqttload

go 1.25

// mqttload is run from a clone and never published: it builds against the
// tree around it.
replace (
	github.com/go-schedule/schedule => ../../..
	github.com/go-schedule/schedule/bench => ../../../bench
	github.com/go-schedule/schedule/mqtt => ../..
)

require (
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/go-schedule/schedule v0.1.0
	github.com/go-schedule/schedule/bench v0.1.0
	github.com/go-schedule/schedule/mqtt v0.1.0
	github.com/mochi-mqtt/server/v2 v2.7.9
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/panjf2000/ants/v2 v2.12.1 // indirect
	github.com/rs/xid v1.4.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.44.0 // indirect
	golang.org/x/sync v0.19.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
