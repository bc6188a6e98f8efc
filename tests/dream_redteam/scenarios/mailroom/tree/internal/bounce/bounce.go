package bounce

// HardBounceLimit is how many hard bounces mark an address undeliverable.
const HardBounceLimit = 3

// Record counts a hard bounce; the address is undeliverable at the limit.
func Record(addr string, hard int) (undeliverable bool) { return hard >= HardBounceLimit }
