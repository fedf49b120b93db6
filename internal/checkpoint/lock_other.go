//go:build !unix

package checkpoint

import "errors"

func (s *Store) lock(bool) (func(), error) {
	return nil, errors.New("checkpoint stores need a unix host")
}
