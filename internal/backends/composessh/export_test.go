package composessh

// CreateMarker is createMarker, for the tests of package composessh_test.
const CreateMarker = createMarker
