package results

import "fmt"

// Bytes formats a size in bytes: 512 B, 1.5 KB, 29 GB (in powers of
// 1024, as memory is counted).
func Bytes(b int64) string {
	const unit = 1024
	if b < unit {
		return fmt.Sprintf("%d B", b)
	}
	x, i := float64(b), -1
	for x >= unit && i < 4 {
		x /= unit
		i++
	}
	s := fmt.Sprintf("%.1f", x)
	if x >= 10 {
		s = fmt.Sprintf("%.0f", x)
	}
	return s + " " + []string{"KB", "MB", "GB", "TB", "PB"}[i]
}
