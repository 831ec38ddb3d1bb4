// Package sim is the discrete-event simulator: the engine on a virtual
// clock and the models of server, senders, dispatcher and dead-letter
// queue. It runs a scenario with the strategies package and returns
// results.
//
// It is filled in with the simulator issue.
package sim
