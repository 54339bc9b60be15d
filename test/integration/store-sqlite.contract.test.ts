import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { describeStoreContract } from '../contract/store-contract.js';

describeStoreContract('SQLite', async () => openSqliteStore(':memory:'));
