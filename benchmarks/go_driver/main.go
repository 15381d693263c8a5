// The per-message-write driver of `python -m benchmarks`: one scenario against one broker with
// amqp091-go, RabbitMQ's Go client, which writes every frame of a publish, every ack and every
// commit as its own socket write (as the Go and Java clients do), where the suite's pipelined
// driver packs many frames into one write.
//
// It connects and sets up, prints "ready", then runs the scenario once for every line it reads
// on stdin, printing one JSON line each time: {"count": operations, "seconds": elapsed,
// "latencies_us": [...]}, and closes when stdin does. The caller reads the broker's CPU time
// between its "go" line and the result, so neither this program's start nor the connection's
// set-up counts. Running a scenario again on the same connection is how the latency scenario is
// interleaved between brokers in blocks (the warm-up round trips precede the first block only).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

type options struct {
	url, queue, scenario               string
	messages, body, perCommit          int
	ackEvery, prefetch, window, warmup int
	seconds                            float64
}

type result struct {
	Count     int       `json:"count"`
	Seconds   float64   `json:"seconds"`
	LatencyUs []float64 `json:"latencies_us,omitempty"`
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

func check(what string, err error) {
	if err != nil {
		fail(what, err)
	}
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "amqp://guest:guest@127.0.0.1:5672/", "broker URL")
	flag.StringVar(&o.queue, "queue", "", "queue (declared by the caller)")
	flag.StringVar(&o.scenario, "scenario", "", "confirm_publish, tx_ack, tx_commit, publish_plain, consume_ack or latency")
	flag.IntVar(&o.messages, "messages", 1000, "messages (confirm_publish, tx_ack, publish_plain, consume_ack) or round trips (latency)")
	flag.Float64Var(&o.seconds, "seconds", 1, "duration of tx_commit")
	flag.IntVar(&o.body, "body", 100, "body size in bytes")
	flag.IntVar(&o.perCommit, "per-commit", 1, "publishes per tx.commit (tx_commit)")
	flag.IntVar(&o.ackEvery, "ack-every", 50, "acks per tx.commit (tx_ack)")
	flag.IntVar(&o.prefetch, "prefetch", 100, "basic.qos prefetch (tx_ack, consume_ack)")
	flag.IntVar(&o.window, "window", 100, "unconfirmed publishes at most (confirm_publish)")
	flag.IntVar(&o.warmup, "warmup", 200, "round trips before measuring (latency)")
	flag.Parse()

	conn, err := amqp.Dial(o.url)
	check("connect", err)
	ch, err := conn.Channel()
	check("channel", err)
	run := setup(ch, &o)

	fmt.Println("ready")
	lines := bufio.NewReader(os.Stdin)
	for {
		if _, err := lines.ReadString('\n'); err != nil {
			break // stdin closed: done
		}
		out, err := json.Marshal(run())
		check("result", err)
		fmt.Println(string(out))
		o.warmup = 0
	}
	conn.Close()
}

// setup prepares the channel for the scenario and returns the measured part.
func setup(ch *amqp.Channel, o *options) func() result {
	body := make([]byte, o.body)
	for i := range body {
		body[i] = 'x'
	}
	persistent := amqp.Publishing{DeliveryMode: amqp.Persistent, Body: body}
	transient := amqp.Publishing{Body: body}
	switch o.scenario {
	case "confirm_publish":
		check("confirm.select", ch.Confirm(false))
		confirms := ch.NotifyPublish(make(chan amqp.Confirmation, o.window+1))
		return func() result { return confirmPublish(ch, confirms, o, persistent) }
	case "tx_commit":
		check("tx.select", ch.Tx())
		return func() result { return txCommit(ch, o, persistent) }
	case "tx_ack":
		check("basic.qos", ch.Qos(o.prefetch, 0, false))
		check("tx.select", ch.Tx())
		deliveries := consumer(ch, o)
		return func() result { return consume(ch, deliveries, o, true) }
	case "publish_plain":
		return func() result { return publishPlain(ch, o, transient) }
	case "consume_ack":
		check("basic.qos", ch.Qos(o.prefetch, 0, false))
		deliveries := consumer(ch, o)
		return func() result { return consume(ch, deliveries, o, false) }
	case "latency":
		deliveries, err := ch.Consume(o.queue, "", true, false, false, false, nil)
		check("basic.consume", err)
		return func() result { return latency(ch, deliveries, o, transient) }
	}
	fail("scenario", fmt.Errorf("unknown scenario %q", o.scenario))
	return nil
}

func since(start time.Time) float64 { return time.Since(start).Seconds() }

// confirmPublish publishes persistent messages in confirm mode with at most o.window
// unconfirmed, until the last is confirmed; a nack fails the run.
func confirmPublish(ch *amqp.Channel, confirms chan amqp.Confirmation, o *options, msg amqp.Publishing) result {
	wait := func() {
		if c := <-confirms; !c.Ack {
			fail("confirm", fmt.Errorf("the broker nacked publish %d", c.DeliveryTag))
		}
	}
	start := time.Now()
	outstanding := 0
	for i := 0; i < o.messages; i++ {
		if outstanding == o.window {
			wait()
			outstanding--
		}
		check("basic.publish", ch.Publish("", o.queue, false, false, msg))
		outstanding++
	}
	for ; outstanding > 0; outstanding-- {
		wait()
	}
	return result{Count: o.messages, Seconds: since(start)}
}

// txCommit publishes o.perCommit persistent messages per tx.commit for o.seconds.
func txCommit(ch *amqp.Channel, o *options, msg amqp.Publishing) result {
	sent := 0
	start := time.Now()
	for since(start) < o.seconds {
		for i := 0; i < o.perCommit; i++ {
			check("basic.publish", ch.Publish("", o.queue, false, false, msg))
		}
		check("tx.commit", ch.TxCommit())
		sent += o.perCommit
	}
	return result{Count: sent, Seconds: since(start)}
}

// consumer starts the one consumer every run of consume takes its deliveries from.
func consumer(ch *amqp.Channel, o *options) <-chan amqp.Delivery {
	deliveries, err := ch.Consume(o.queue, "bench", false, false, false, false, nil)
	check("basic.consume", err)
	return deliveries
}

// consume receives o.messages already on the queue and acks each; in a transaction
// (inTx) a tx.commit follows every o.ackEvery acks and the last one.
func consume(ch *amqp.Channel, deliveries <-chan amqp.Delivery, o *options, inTx bool) result {
	start := time.Now()
	timeout := time.After(60 * time.Second)
	got := 0
	for got < o.messages {
		select {
		case d, ok := <-deliveries:
			if !ok {
				fail("consume", fmt.Errorf("deliveries ended after %d of %d", got, o.messages))
			}
			check("basic.ack", d.Ack(false))
			got++
			if inTx && (got%o.ackEvery == 0 || got == o.messages) {
				check("tx.commit", ch.TxCommit())
			}
		case <-timeout:
			fail("consume", fmt.Errorf("queue ran dry after %d of %d", got, o.messages))
		}
	}
	return result{Count: got, Seconds: since(start)}
}

// publishPlain publishes transient messages without confirms, done when a passive declare
// counts them all on the queue.
func publishPlain(ch *amqp.Channel, o *options, msg amqp.Publishing) result {
	start := time.Now()
	for i := 0; i < o.messages; i++ {
		check("basic.publish", ch.Publish("", o.queue, false, false, msg))
	}
	for {
		q, err := ch.QueueDeclarePassive(o.queue, false, false, false, false, nil)
		check("queue.declare", err)
		if q.Messages >= o.messages {
			break
		}
		if since(start) > 120 {
			fail("publish", fmt.Errorf("only %d of %d publishes reached the queue", q.Messages, o.messages))
		}
	}
	return result{Count: o.messages, Seconds: since(start)}
}

// latency publishes one transient message at a time and waits for its delivery back.
func latency(ch *amqp.Channel, deliveries <-chan amqp.Delivery, o *options, msg amqp.Publishing) result {
	times := make([]float64, 0, o.messages)
	start := time.Now()
	for i := 0; i < o.warmup+o.messages; i++ {
		sent := time.Now()
		check("basic.publish", ch.Publish("", o.queue, false, false, msg))
		if _, ok := <-deliveries; !ok {
			fail("latency", fmt.Errorf("deliveries ended after %d round trips", i))
		}
		if i >= o.warmup {
			times = append(times, float64(time.Since(sent).Nanoseconds())/1e3)
		}
	}
	return result{Count: o.warmup + o.messages, Seconds: since(start), LatencyUs: times}
}
