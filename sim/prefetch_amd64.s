#include "textflag.h"

// func prefetch(p unsafe.Pointer)
TEXT ·prefetch(SB), NOSPLIT, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func prefetchGraph(events []event, calls unsafe.Pointer, ncalls int, created unsafe.Pointer, jobs unsafe.Pointer, njobs int, callKinds, jobKinds, endKinds uint64)
TEXT ·prefetchGraph(SB), NOSPLIT, $0-88
	MOVQ events_base+0(FP), SI
	MOVQ events_len+8(FP), CX
	MOVQ calls+24(FP), DI
	MOVQ ncalls+32(FP), R8
	MOVQ created+40(FP), R9
	MOVQ jobs+48(FP), R11
	MOVQ njobs+56(FP), R12
	MOVQ callKinds+64(FP), R13
	MOVQ endKinds+80(FP), R10
	TESTQ CX, CX
	JEQ gdone
gloop:
	MOVLQSX 16(SI), AX // the event's a
	MOVBQZX 8(SI), BX  // the event's kind
	BTQ BX, R13
	JCS gcall          // a names a call
	MOVQ jobKinds+72(FP), DX
	BTQ BX, DX
	JCC gnext          // a names neither
	CMPQ AX, R12
	JAE gnext          // a < 0 or a >= njobs: no job
	MOVQ AX, DX
	SHLQ $6, DX        // a * 64, the job's offset
	ADDQ R11, DX
	PREFETCHT0 (DX)
	MOVLQSX 0(DX), AX  // the job's call: a load, inside jobs
gcall:
	CMPQ AX, R8
	JAE gnext          // no call
	MOVQ AX, DX
	SHLQ $5, DX        // a * 32, the call's offset
	PREFETCHT0 (DI)(DX*1)
	BTQ BX, R10
	JCC gnext
	PREFETCHT0 (R9)(AX*8)
gnext:
	ADDQ $24, SI
	DECQ CX
	JNE gloop
gdone:
	RET
