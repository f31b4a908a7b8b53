package integration_test

import (
	"testing"

	"github.com/binlake/binlake/internal/testenv"
)

func TestMain(m *testing.M) { testenv.RunRemovingBinlake(m) }
