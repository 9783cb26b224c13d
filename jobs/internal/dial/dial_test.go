package dial

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTimeoutSharesTheConnectTimeBetweenURLs(t *testing.T) {
	assert.Equal(t, connectShare, Timeout("nats://a:4222"))
	assert.Equal(t, connectShare/2, Timeout("nats://a:4222,nats://b:4222"))
	assert.Equal(t, minTimeout, Timeout("a,b,c,d,e,f,g,h,i,j"), "never below the floor")
}
