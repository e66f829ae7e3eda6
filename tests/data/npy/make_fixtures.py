# Regenerates the .npy fixtures of tests/ir/npy_test.cc (needs numpy and ml_dtypes; the tests
# themselves need no Python). Run from this folder: python3 make_fixtures.py
import numpy as np, ml_dtypes
a = np.arange(6).reshape(2, 3)
for d in ['i1', '<i2', '>i2', '<i4', '>i4', '<i8', 'u1', '<u2', '<u4', '>u8',
          '<f2', '>f2', '<f4', '>f4', '<f8', '>f8', '<c8', '>c16']:
    name = d.replace('<', 'le_').replace('>', 'be_')
    if not name.startswith(('le_', 'be_')):
        name = 'le_' + name
    v = (a + 1j * (a + 10)).astype(d) if 'c' in d else a.astype(d)
    np.save(f'{name}.npy', v)
np.save('bool.npy', a % 2 == 0)
np.save('bf16.npy', np.array([[1.5, -2.0, 3.25], [0.0, 1e10, -0.5]], dtype=ml_dtypes.bfloat16))
np.save('fortran_f4.npy', np.asfortranarray(a.astype('<f4')))
np.save('fortran_3d_i2.npy', np.asfortranarray(np.arange(24).reshape(2, 3, 4).astype('<i2')))
np.save('scalar_f8.npy', np.float64(2.5))
np.save('empty_s32.npy', np.zeros((0, 4), dtype='<i4'))
np.lib.format.write_array(open('v2_i4.npy', 'wb'), a.astype('<i4'), version=(2, 0))
np.lib.format.write_array(open('v3_i4.npy', 'wb'), a.astype('<i4'), version=(3, 0))
np.save('unicode.npy', np.array(['ab', 'c']))
