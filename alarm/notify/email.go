package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"

	"github.com/binlake/binlake/internal/config"
)

// EmailOptions configures the SMTP channel.
type EmailOptions struct {
	// Addr is the server's host:port (587 for submission with STARTTLS).
	Addr     string
	From     string
	To       []string
	Username string
	Password config.Secret
	// StartTLS: "required" (default: refuse a server without STARTTLS), "opportunistic"
	// (use it when offered) or "off".
	StartTLS string
	// TLS is the TLS configuration for STARTTLS; one verifying the server name when nil.
	TLS *tls.Config
	// Hello is the name sent in EHLO; "localhost" when empty.
	Hello string
	Now   func() time.Time
}

// STARTTLS modes.
const (
	StartTLSRequired      = "required"
	StartTLSOpportunistic = "opportunistic"
	StartTLSOff           = "off"
)

// Email sends messages over SMTP.
type Email struct {
	o    EmailOptions
	host string
}

var _ Notifier = (*Email)(nil)

// NewEmail checks the options and builds the channel.
func NewEmail(o EmailOptions) (*Email, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil || strings.Contains(o.Addr, "@") {
		// user:password@smtp:587 pasted: shown with the password as ***.
		return nil, fmt.Errorf("email addr %q: want host:port, without a user or password (username and password_file)", config.Redact(o.Addr))
	}
	if _, err := mail.ParseAddress(o.From); err != nil {
		return nil, fmt.Errorf("email from %q: %v", o.From, err)
	}
	if len(o.To) == 0 {
		return nil, errors.New("email: no recipients (to)")
	}
	for _, t := range o.To {
		if _, err := mail.ParseAddress(t); err != nil {
			return nil, fmt.Errorf("email to %q: %v", t, err)
		}
	}
	switch o.StartTLS {
	case "":
		o.StartTLS = StartTLSRequired
	case StartTLSRequired, StartTLSOpportunistic, StartTLSOff:
	default:
		return nil, fmt.Errorf("email starttls %q: want required, opportunistic or off", o.StartTLS)
	}
	if o.TLS == nil {
		o.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if o.Hello == "" {
		o.Hello = "localhost"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Email{o: o, host: host}, nil
}

// Notify implements Notifier: one mail per message to every recipient.
func (e *Email) Notify(ctx context.Context, m Message) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", e.o.Addr)
	if err != nil {
		return fmt.Errorf("email: dial %s: %w", e.o.Addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, e.host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("email: %w", err)
	}
	defer c.Close()
	if err := c.Hello(e.o.Hello); err != nil {
		return fmt.Errorf("email: EHLO: %w", err)
	}
	if e.o.StartTLS != StartTLSOff {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(e.o.TLS); err != nil {
				return fmt.Errorf("email: STARTTLS: %w", err)
			}
		} else if e.o.StartTLS == StartTLSRequired {
			return fmt.Errorf("email: %s does not offer STARTTLS (set starttls: opportunistic or off to send in clear): %w", e.o.Addr, ErrPermanent)
		}
	}
	if e.o.Username != "" {
		// PlainAuth refuses to send the password over an unencrypted connection except to
		// localhost.
		if err := c.Auth(smtp.PlainAuth("", e.o.Username, e.o.Password.Reveal(), e.host)); err != nil {
			return fmt.Errorf("email: AUTH: %w", err)
		}
	}
	if err := c.Mail(e.o.From); err != nil {
		return fmt.Errorf("email: MAIL FROM: %w", err)
	}
	for _, t := range e.o.To {
		if err := c.Rcpt(t); err != nil {
			return fmt.Errorf("email: RCPT TO %s: %w", t, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("email: DATA: %w", err)
	}
	if _, err := w.Write(e.compose(m)); err != nil {
		return fmt.Errorf("email: write: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("email: end of data: %w", err)
	}
	if err := c.Quit(); err != nil {
		// The server accepted the mail; a failing QUIT does not lose it.
		return nil
	}
	return nil
}

func (e *Email) compose(m Message) []byte {
	title, body := Text(m, false)
	var b bytes.Buffer
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", e.o.From)
	hdr("To", strings.Join(e.o.To, ", "))
	hdr("Subject", mime.QEncoding.Encode("utf-8", title))
	hdr("Date", e.o.Now().Format(time.RFC1123Z))
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "8bit")
	hdr("X-Binlake-Group", mime.QEncoding.Encode("utf-8", m.GroupKey))
	b.WriteString("\r\n")
	for _, line := range strings.Split(body, "\n") {
		b.WriteString(line)
		b.WriteString("\r\n")
	}
	return b.Bytes()
}
