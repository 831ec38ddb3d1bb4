#include "textflag.h"

// func prefetch(p unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetchRequests(events []event, reqs unsafe.Pointer, n int, created unsafe.Pointer, ends uint64)
TEXT ·prefetchRequests(SB), NOSPLIT, $0-56
	MOVQ events_base+0(FP), SI
	MOVQ events_len+8(FP), CX
	MOVQ reqs+24(FP), DI
	MOVQ n+32(FP), R8
	MOVQ created+40(FP), R9
	MOVQ ends+48(FP), R10
	TESTQ CX, CX
	JEQ done
loop:
	MOVLQSX 16(SI), AX // the event's a
	CMPQ AX, R8
	JAE next // a < 0 or a >= n: no request
	MOVQ AX, DX
	SHLQ $5, DX // a * 32, the request's offset
	PREFETCHT0 (DI)(DX*1)
	MOVBQZX 8(SI), BX // the event's kind
	BTQ BX, R10
	JCC next
	PREFETCHT0 (R9)(AX*8)
next:
	ADDQ $24, SI
	DECQ CX
	JNE loop
done:
	RET
